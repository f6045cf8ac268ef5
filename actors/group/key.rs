//! What makes two scrape jobs share a group: the same API server and credentials, the
//! same namespaces and selectors, the same attach_metadata and semantics. The role is not part of it:
//! a pod job and an endpoints job of one cluster share one pod cache.

use crate::api::RoleSelector;
use crate::http::ApiEndpoint;
use crate::targets::{AttachMetadata, Semantics, TargetOptions};

/// The identity of a group.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GroupKey {
    /// The API server and how to reach it.
    pub endpoint: ApiEndpoint,
    /// Namespaces, sorted and unique; empty for all.
    pub namespaces: Vec<String>,
    /// Selectors, sorted, so that order in the config does not split groups.
    pub selectors: Vec<RoleSelector>,
    /// Related metadata attached to targets.
    pub attach: AttachMetadata,
    /// Whose target semantics the group's labels follow (the engine's).
    pub semantics: Semantics,
}

impl GroupKey {
    /// How the group's targets are labelled.
    pub fn target_options(&self) -> TargetOptions {
        TargetOptions {
            attach: self.attach,
            semantics: self.semantics,
        }
    }
}
