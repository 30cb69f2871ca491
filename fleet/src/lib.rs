//! tollgate's fleet mode on DynamoDB (issue 13): every host's coordinator draws each
//! key's capacity in token blocks from one DynamoDB item per canonical key.
//!
//! The protocol is pure and lives in `tollgate_quota::fleet`; the actors' seam (the
//! `FleetStore` trait, the exchange loop, the host id) in `tollgate_actors::fleet`. This
//! crate is the AWS side: the store over the SDK, the item layout, table setup, settings.
//!
//! # Layout
//! - [`settings`]: `TOLLGATE_FLEET_*` (and the service's `[fleet]` values) validated
//!   into [`FleetSettings`].
//! - [`layout`]: the item's attributes (the one place they are written down in code);
//!   [`calendar_layout`]: the calendar's (issue 23), on scheduled keys only.
//! - [`dynamo`]: [`DynamoFleetStore`], GetItem / conditional PutItem, request counting.
//! - [`breakers`]: the breaker items (`breaker#<scope>`) on the same table.
//! - [`classify`]: SDK errors → unreachable / throttled / access denied / no table.
//! - [`table`]: `fleet init`: create the table, enable TTL, the IAM policy.
//! - [`status`]: `fleet status`: each key's item summarized.
#![forbid(unsafe_code)]

pub mod breakers;
pub mod calendar_layout;
pub mod classify;
pub mod dynamo;
pub mod item_error;
pub mod layout;
pub mod settings;
pub mod status;
pub mod table;

use std::sync::Arc;

pub use dynamo::DynamoFleetStore;
pub use settings::{FleetSettings, FleetValues, SettingsError};
use tollgate_actors::FleetSpec;

/// Read `TOLLGATE_FLEET_*`; when a table is set, fleet mode on it, for the
/// [`CoordinatorSpec`](tollgate_actors::CoordinatorSpec) of a command that coordinates.
/// `Ok(None)`: no table set, nothing changes. Only commands that may coordinate call this,
/// so a malformed setting never breaks one that does not (`tollgate policies`).
pub fn spec_from_env() -> Result<Option<FleetSpec>, SettingsError> {
    Ok(FleetSettings::from_env()?.map(spec))
}

/// Fleet mode on `settings`: quota blocks and breakers (issue 14) on the same table.
pub fn spec(settings: FleetSettings) -> FleetSpec {
    let store = DynamoFleetStore::new(settings.clone());
    FleetSpec {
        store: Arc::new(store.clone()),
        config: settings.config,
        breakers: Some(Arc::new(store)),
    }
}
