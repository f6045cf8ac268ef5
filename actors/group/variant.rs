//! What a subscriber asks its group for: the targets of a role, with the related
//! metadata its job attaches. `attach_metadata` is not part of the [`GroupKey`]: jobs
//! that differ only in what they attach share one group, so one list and one watch per
//! resource, and the group computes each object's targets once per variant asked for.
//!
//! [`GroupKey`]: super::GroupKey

use smallvec::SmallVec;

use crate::config::watched_roles;
use crate::model::Role;
use crate::targets::{AttachMetadata, Semantics, TargetOptions};

/// A role's targets as some subscribers want them: the role, and what they attach of
/// it (only what the role reads, [`AttachMetadata::for_role`], so that jobs whose
/// settings make no difference share a variant).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TargetVariant {
    /// The role discovered.
    pub role: Role,
    /// The related metadata attached to its targets.
    pub attach: AttachMetadata,
}

impl TargetVariant {
    /// The variant of `role` with `attach`, keeping only what `role` reads.
    pub fn new(role: Role, attach: AttachMetadata) -> TargetVariant {
        TargetVariant {
            role,
            attach: attach.for_role(role),
        }
    }

    /// How its targets are labelled under `semantics`.
    pub fn target_options(&self, semantics: Semantics) -> TargetOptions {
        TargetOptions {
            attach: self.attach,
            semantics,
        }
    }

    /// The roles whose objects its targets are built from (its own and what it looks
    /// up), each listed and watched by the group.
    pub fn watched_roles(&self, semantics: Semantics) -> Vec<Role> {
        watched_roles(self.role, self.target_options(semantics))
    }
}

/// A variant's number in its group: kept while it has subscribers, reused after. The
/// cache stores each object's targets and dependencies under it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VariantId(pub u16);

/// A variant that some of the group's subscribers ask for.
#[derive(Debug)]
pub struct VariantState {
    /// Its number.
    pub id: VariantId,
    /// What it is.
    pub wants: TargetVariant,
    /// Whether every URL it needs has been listed once (then it stays so).
    pub synced: bool,
}

/// The variants of one role a change is computed for: each one's number and how its
/// targets are labelled. Usually one, held inline.
pub type Audience = SmallVec<[(VariantId, TargetOptions); 1]>;

/// The variants a group's subscribers ask for: a handful, so a vector searched in
/// order. A variant is added when its first subscriber registers and removed with its
/// last.
#[derive(Debug, Default)]
pub struct Variants(Vec<VariantState>);

impl Variants {
    /// The variant numbered `id`.
    pub fn get(&self, id: VariantId) -> Option<&VariantState> {
        self.0.iter().find(|v| v.id == id)
    }

    /// The variant numbered `id`, to change.
    pub fn get_mut(&mut self, id: VariantId) -> Option<&mut VariantState> {
        self.0.iter_mut().find(|v| v.id == id)
    }

    /// The variant `wants`, if someone asks for it.
    pub fn find(&self, wants: &TargetVariant) -> Option<&VariantState> {
        self.0.iter().find(|v| v.wants == *wants)
    }

    /// The number of `wants`, added (not synced) if nobody asked for it yet: the
    /// smallest number free, so numbers stay small.
    pub fn add(&mut self, wants: TargetVariant) -> VariantId {
        if let Some(v) = self.find(&wants) {
            return v.id;
        }
        let id = (0..=u16::MAX)
            .map(VariantId)
            .find(|id| self.get(*id).is_none())
            .unwrap_or(VariantId(u16::MAX));
        self.0.push(VariantState {
            id,
            wants,
            synced: false,
        });
        id
    }

    /// Forgets the variant numbered `id`; returns it.
    pub fn remove(&mut self, id: VariantId) -> Option<VariantState> {
        let at = self.0.iter().position(|v| v.id == id)?;
        Some(self.0.swap_remove(at))
    }

    /// Every variant.
    pub fn iter(&self) -> impl Iterator<Item = &VariantState> {
        self.0.iter()
    }

    /// Whether subscribers ask for `wants` and it has synced.
    pub fn is_synced(&self, wants: &TargetVariant) -> bool {
        self.find(wants).is_some_and(|v| v.synced)
    }

    /// Whether the variant numbered `id` has synced.
    pub fn synced(&self, id: VariantId) -> bool {
        self.get(id).is_some_and(|v| v.synced)
    }

    /// The variants of `role`, labelled under `semantics`.
    pub fn audience(&self, role: Role, semantics: Semantics) -> Audience {
        self.0
            .iter()
            .filter(|v| v.wants.role == role)
            .map(|v| (v.id, v.wants.target_options(semantics)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_reused_and_a_variant_is_added_once() {
        let mut variants = Variants::default();
        let plain = TargetVariant::new(Role::Pod, AttachMetadata::default());
        let node = TargetVariant::new(
            Role::Pod,
            AttachMetadata {
                node: true,
                ..AttachMetadata::default()
            },
        );
        assert_eq!(variants.add(plain), VariantId(0));
        assert_eq!(variants.add(node), VariantId(1));
        assert_eq!(variants.add(plain), VariantId(0));
        assert_eq!(variants.audience(Role::Pod, Semantics::default()).len(), 2);
        assert!(
            variants
                .audience(Role::Service, Semantics::default())
                .is_empty()
        );
        variants.remove(VariantId(0));
        let service = TargetVariant::new(Role::Service, AttachMetadata::default());
        assert_eq!(variants.add(service), VariantId(0));
    }

    #[test]
    fn settings_a_role_never_reads_make_no_new_variant() {
        let node = AttachMetadata {
            node: true,
            ..AttachMetadata::default()
        };
        let plain = AttachMetadata::default();
        assert_eq!(
            TargetVariant::new(Role::Service, node),
            TargetVariant::new(Role::Service, plain)
        );
        assert_ne!(
            TargetVariant::new(Role::Pod, node),
            TargetVariant::new(Role::Pod, plain)
        );
        let namespace = AttachMetadata {
            namespace: true,
            ..AttachMetadata::default()
        };
        assert_eq!(
            TargetVariant::new(Role::Node, namespace),
            TargetVariant::new(Role::Node, plain)
        );
        assert_ne!(
            TargetVariant::new(Role::Ingress, namespace),
            TargetVariant::new(Role::Ingress, plain)
        );
    }
}
