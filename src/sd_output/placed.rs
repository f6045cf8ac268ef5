//! An object's served groups together with what assigning its targets to members
//! reads ([`PlacedGroups`]): its discovered label sets and, per kept target, the set it
//! came from, the place of its address in the groups and its relabelled address's
//! hash. A job actor keeps it as the object's entry in its body while member views are
//! served, so that a member's or collector's share can be decided from the published
//! snapshot alone, when it is asked for (see `service::fleet::assigned`).

use std::sync::Arc;

use super::ObjectGroups;
use crate::labels::Labels;

/// One target the job's relabelling kept, as assigning it reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeptTarget {
    /// The discovered label set it came from, by index among the object's.
    pub source: u32,
    /// The place of its address among the groups' addresses (see
    /// [`ObjectGroups::placed`]; 0 for an object of one address).
    pub place: u32,
    /// Its relabelled `__address__`, hashed for the rendezvous (FNV-1a).
    pub hash: u64,
    /// Its discovered label set has an address: a collector reads only those as
    /// targets, so only those are in its share.
    pub collected: bool,
}

/// An object's groups, discovered label sets and kept targets.
#[derive(Debug)]
pub struct PlacedGroups {
    /// What the job serves of it.
    pub groups: Arc<ObjectGroups>,
    /// Its discovered label sets (the group's `Arc`, nothing copied).
    pub discovered: Arc<[Labels]>,
    /// Its kept targets with an address, in the order relabelling kept them.
    pub kept: Box<[KeptTarget]>,
    /// Unique to this placement among its job actor's: what a collector's share of
    /// it adds to its body's ETag (its labels' bytes are not read for it).
    pub stamp: u64,
}
