//! Which URLs the monitors' watch reads: each kind the section selects (cluster-wide,
//! or once per allowed namespace, its label selector pushed to the API server as the
//! operator lists with it), the Namespaces (their labels select), and the Secrets and
//! ConfigMaps of each namespace whose selected monitors name some.

use std::collections::BTreeSet;

use super::cache::CacheKey;
use crate::api::ResourceUrl;
use crate::model::Role;
use crate::monitors::section::{KindSelection, MonitorsSection};

/// The URLs of the monitors and the Namespaces: what the section says.
pub fn monitor_urls(section: &MonitorsSection) -> Vec<ResourceUrl> {
    if !section.enabled {
        return Vec::new();
    }
    let kinds: [(Role, &KindSelection); 4] = [
        (Role::ServiceMonitor, &section.service_monitors),
        (Role::PodMonitor, &section.pod_monitors),
        (Role::Probe, &section.probes),
        (Role::ScrapeConfig, &section.scrape_configs),
    ];
    let mut urls = Vec::new();
    for (role, selection) in kinds {
        let Some(selector) = &selection.selector else {
            continue;
        };
        // Checked when the section was read.
        let label_selector = selector.to_query().unwrap_or_default();
        let namespaces: Vec<Option<String>> = if section.allow_namespaces.is_empty() {
            vec![None]
        } else {
            section.allow_namespaces.iter().cloned().map(Some).collect()
        };
        for namespace in namespaces {
            urls.push(ResourceUrl {
                role,
                namespace,
                label_selector: label_selector.clone(),
                field_selector: String::new(),
            });
        }
    }
    if !urls.is_empty() {
        urls.push(url(Role::Namespace, None));
    }
    urls
}

/// The Secrets' and ConfigMaps' URLs for `wanted`: one per kind and namespace.
pub fn credential_urls(wanted: &BTreeSet<CacheKey>) -> BTreeSet<ResourceUrl> {
    wanted
        .iter()
        .map(|(role, namespace, _)| url(*role, Some(namespace.clone())))
        .collect()
}

/// The names `wanted` holds for `url`'s kind and namespace.
pub fn names_for(url: &ResourceUrl, wanted: &BTreeSet<CacheKey>) -> BTreeSet<String> {
    wanted
        .iter()
        .filter(|(role, ns, _)| *role == url.role && url.namespace.as_deref() == Some(ns))
        .map(|(_, _, name)| name.clone())
        .collect()
}

fn url(role: Role, namespace: Option<String>) -> ResourceUrl {
    ResourceUrl {
        role,
        namespace,
        label_selector: String::new(),
        field_selector: String::new(),
    }
}
