//! Where objects are read from: API paths per role and version, one URL per namespace,
//! label and field selectors, and the query strings of LIST and WATCH requests.

mod namespaces;
mod paths;
mod query;
mod selectors;
mod server_version;

pub(crate) use namespaces::context_namespace;
pub use namespaces::{OwnNamespaceError, SERVICE_ACCOUNT_NAMESPACE_FILE, read_own_namespace};
pub use paths::{ApiGroupVersion, ResourceUrl, resource_urls};
pub use query::{ListQuery, WatchQuery};
pub use selectors::{RoleSelector, SelectorError, selectors_for_role};
pub use server_version::ServerVersion;
