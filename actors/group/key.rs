//! What makes two scrape jobs share a group: the same API server and credentials, the
//! same namespaces and selectors, the same semantics. Neither the role nor
//! `attach_metadata` is part of it: a pod job and an endpoints job of one cluster share
//! one pod cache, and a job attaching node metadata shares the pods' list and watch with
//! one that does not (each gets its own labels, [`super::TargetVariant`]).

use crate::api::RoleSelector;
use crate::http::ApiEndpoint;
use crate::targets::Semantics;

/// The identity of a group.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GroupKey {
    /// The API server and how to reach it.
    pub endpoint: ApiEndpoint,
    /// Namespaces, sorted and unique; empty for all.
    pub namespaces: Vec<String>,
    /// Selectors, sorted, so that order in the config does not split groups.
    pub selectors: Vec<RoleSelector>,
    /// Whose target semantics the group's labels follow (the engine's).
    pub semantics: Semantics,
}
