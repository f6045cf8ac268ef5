//! The key the store files an object under.

/// Identifies an object within a resource: (namespace, name); the namespace
/// is empty for cluster-scoped resources. Ordered, so lists are sorted by it.
pub type ObjectKey = (String, String);
