//! The section's scrape classes, and how a monitor's settings merge with its class's,
//! as prometheus-operator merges them (`getScrapeClassOrDefault` and the
//! `merge…WithScrapeClass` functions).

use std::collections::BTreeMap;

use kubesd_core::monitors::{
    AttachMetadata, Authorization, SafeAuthorization, SafeTlsConfig, ScrapeClass, TlsConfig,
};

use super::validate::{check_authorization, check_relabelings, check_tls};

/// The scrape classes, by name, and the default one.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScrapeClasses {
    by_name: BTreeMap<String, ScrapeClass>,
    default: Option<String>,
}

/// The class of a monitor that names none, when no class is the default.
static NO_CLASS: ScrapeClass = ScrapeClass {
    name: String::new(),
    default: None,
    fallback_scrape_protocol: None,
    tls_config: None,
    authorization: None,
    relabelings: Vec::new(),
    metric_relabelings: Vec::new(),
    attach_metadata: None,
};

impl ScrapeClasses {
    /// Checks `classes` as the operator does when it starts; on error, the class's
    /// position and what is wrong.
    pub fn new(classes: Vec<ScrapeClass>) -> Result<ScrapeClasses, (usize, String)> {
        let mut out = ScrapeClasses::default();
        for (i, class) in classes.into_iter().enumerate() {
            let fail = |why: String| (i, why);
            if class.name.is_empty() {
                return Err(fail("name: required".into()));
            }
            check_relabelings(&class.relabelings).map_err(|e| fail(format!("relabelings{e}")))?;
            check_relabelings(&class.metric_relabelings)
                .map_err(|e| fail(format!("metricRelabelings{e}")))?;
            if let Some(tls) = &class.tls_config {
                check_tls(tls).map_err(|e| fail(format!("tlsConfig: {e}")))?;
            }
            if let Some(authorization) = &class.authorization {
                check_authorization(authorization)
                    .map_err(|e| fail(format!("authorization: {e}")))?;
            }
            if class.default == Some(true) {
                if let Some(first) = &out.default {
                    return Err(fail(format!(
                        "default: {first:?} is the default scrape class already"
                    )));
                }
                out.default = Some(class.name.clone());
            }
            if out.by_name.contains_key(&class.name) {
                return Err(fail(format!("name: {:?} is defined twice", class.name)));
            }
            out.by_name.insert(class.name.clone(), class);
        }
        Ok(out)
    }

    /// Whether a class of this name exists.
    pub fn contains(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// The class a monitor naming `name` takes: that class if it exists, else the
    /// default class, else none (an empty class).
    pub fn for_monitor(&self, name: Option<&str>) -> &ScrapeClass {
        name.and_then(|n| self.by_name.get(n))
            .or_else(|| self.default.as_ref().and_then(|d| self.by_name.get(d)))
            .unwrap_or(&NO_CLASS)
    }
}

/// The monitor's `authorization` (its type and Secret) with the class's: the class's
/// when the monitor sets none; its credentials where the monitor's have none.
pub fn merge_safe_authorization(
    own: Option<&SafeAuthorization>,
    class: &ScrapeClass,
) -> Option<Authorization> {
    match own {
        Some(a) if a != &SafeAuthorization::default() => merge_authorization(
            Some(Authorization {
                safe: a.clone(),
                credentials_file: String::new(),
            }),
            class,
        ),
        _ => merge_authorization(None, class),
    }
}

fn merge_authorization(own: Option<Authorization>, class: &ScrapeClass) -> Option<Authorization> {
    let Some(mut own) = own else {
        return class.authorization.clone();
    };
    let Some(theirs) = &class.authorization else {
        return Some(own);
    };
    if own.safe.credentials.is_none() {
        own.safe.credentials = theirs.safe.credentials.clone();
    }
    if own.safe.credentials.is_none() && own.credentials_file.is_empty() {
        own.safe.credentials = theirs.safe.credentials.clone();
        own.credentials_file = theirs.credentials_file.clone();
    }
    Some(own)
}

/// A monitor's TLS settings (Secrets only) with the class's: the class's when the
/// monitor sets none.
pub fn merge_safe_tls(own: Option<&SafeTlsConfig>, class: &ScrapeClass) -> Option<TlsConfig> {
    match own {
        Some(tls) if !tls.is_zero() => merge_tls(
            Some(&TlsConfig {
                safe: tls.clone(),
                ..TlsConfig::default()
            }),
            class,
        ),
        _ => merge_tls(None, class),
    }
}

/// A monitor's TLS settings with the class's: the class's when the monitor sets none;
/// otherwise the class's files where the monitor names neither a file nor a Secret.
pub fn merge_tls(own: Option<&TlsConfig>, class: &ScrapeClass) -> Option<TlsConfig> {
    let Some(own) = own else {
        return class.tls_config.clone();
    };
    let Some(theirs) = &class.tls_config else {
        return Some(own.clone());
    };
    let mut tls = own.clone();
    if tls.ca_file.is_empty() && tls.safe.ca.is_empty() {
        tls.ca_file = theirs.ca_file.clone();
    }
    if tls.cert_file.is_empty() && tls.safe.cert.is_empty() {
        tls.cert_file = theirs.cert_file.clone();
    }
    if tls.key_file.is_empty() && tls.safe.key_secret.is_none() {
        tls.key_file = theirs.key_file.clone();
    }
    Some(tls)
}

/// The monitor's `attachMetadata`, else the class's.
pub fn merge_attach_metadata(
    own: Option<&AttachMetadata>,
    class: &ScrapeClass,
) -> Option<AttachMetadata> {
    own.or(class.attach_metadata.as_ref()).cloned()
}

/// The monitor's `fallbackScrapeProtocol`, else the class's.
pub fn merge_fallback_protocol(own: Option<&String>, class: &ScrapeClass) -> Option<String> {
    own.or(class.fallback_scrape_protocol.as_ref()).cloned()
}
