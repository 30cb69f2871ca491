//! `HostId`: a host's identity on a fleet item, in a file of its own because both the
//! item and its calendar (the hosts' declarations) name hosts.

/// A host's identity on the item (see `tollgate-fleet` for how it is chosen).
pub type HostId = String;
