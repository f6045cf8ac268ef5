//! The checks prometheus-operator makes before it generates a monitor's jobs
//! (`resource_selector.go`, the `Validate` methods of its types and its store): a
//! monitor that fails one is rejected whole, with the reason, and the others go on.

use kubesd_core::monitors::{
    Authorization, BasicAuth, OAuth2, ProxyConfig, RelabelConfig, SafeAuthorization, SafeTlsConfig,
    TlsConfig,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use super::error::Reason;
use super::store::Credentials;
use crate::promconfig::parse_duration;

/// Relabelling rules as the operator's `LabelConfigValidator` checks them (for
/// Prometheus 3, whose label names are any UTF-8); on error, `[index]: why`.
pub fn check_relabelings(rules: &[RelabelConfig]) -> Result<(), String> {
    for (i, rule) in rules.iter().enumerate() {
        check_rule(rule).map_err(|why| format!("[{i}]: {why}"))?;
    }
    Ok(())
}

fn check_rule(rule: &RelabelConfig) -> Result<(), String> {
    let action = if rule.action.is_empty() {
        "replace".to_string()
    } else {
        rule.action.to_lowercase()
    };
    let written = &rule.action;
    regex::Regex::new(&format!("^(?s:{})$", rule.regex)).map_err(|e| {
        format!(
            "invalid regex {} for relabel configuration: {e}",
            rule.regex
        )
    })?;
    if rule.modulus == 0 && action == "hashmod" {
        return Err("relabel configuration for hashmod requires non-zero modulus".into());
    }
    let needs_target = [
        "replace",
        "hashmod",
        "lowercase",
        "uppercase",
        "keepequal",
        "dropequal",
    ];
    if needs_target.contains(&action.as_str()) && rule.target_label.is_empty() {
        return Err(format!(
            "relabel configuration for {written} action needs targetLabel value"
        ));
    }
    let default_replacement = rule.replacement.as_deref().is_none_or(|r| r == "$1");
    let default_separator = rule.separator.as_deref().is_none_or(|s| s == ";");
    let cased = ["lowercase", "uppercase", "keepequal", "dropequal"];
    if cased.contains(&action.as_str()) && !default_replacement {
        return Err(format!("'replacement' can not be set for {written} action"));
    }
    if action == "labelmap" && rule.replacement.as_deref() == Some("") {
        return Err(format!(
            "\"\" is invalid 'replacement' for {written} action"
        ));
    }
    if action == "keepequal" || action == "dropequal" {
        let default_regex = rule.regex.is_empty() || rule.regex == "(.*)";
        if !default_regex || rule.modulus != 0 || !default_separator || !default_replacement {
            return Err(format!(
                "{written} action requires only 'source_labels' and `target_label`, and no \
                 other fields"
            ));
        }
    }
    if (action == "labeldrop" || action == "labelkeep")
        && (!rule.source_labels.is_empty()
            || !rule.target_label.is_empty()
            || rule.modulus != 0
            || !default_separator
            || !default_replacement)
    {
        return Err(format!(
            "{written} action requires only 'regex', and no other fields"
        ));
    }
    Ok(())
}

/// `SafeTLSConfig.Validate`.
pub fn check_safe_tls(tls: &SafeTlsConfig) -> Result<(), String> {
    for (what, sel) in [("ca", &tls.ca), ("cert", &tls.cert)] {
        if sel.secret.is_some() && sel.config_map.is_some() {
            return Err(format!(
                "{what} {}: cannot specify both Secret and ConfigMap",
                sel.describe()
            ));
        }
    }
    if !tls.cert.is_empty() && tls.key_secret.is_none() {
        return Err("client cert specified without client key".into());
    }
    if tls.key_secret.is_some() && tls.cert.is_empty() {
        return Err("client key specified without client cert".into());
    }
    if let (Some(max), Some(min)) = (&tls.max_version, &tls.min_version)
        && max < min
    {
        return Err("maxVersion must more than or equal to minVersion".into());
    }
    Ok(())
}

/// `TLSConfig.Validate`: files and Secrets are exclusive, a certificate needs a key.
pub fn check_tls(tls: &TlsConfig) -> Result<(), String> {
    let safe = &tls.safe;
    if !safe.ca.is_empty() && !tls.ca_file.is_empty() {
        return Err("cannot specify both caFile and ca".into());
    }
    if !safe.cert.is_empty() && !tls.cert_file.is_empty() {
        return Err("cannot specify both certFile and cert".into());
    }
    if !tls.key_file.is_empty() && safe.key_secret.is_some() {
        return Err("cannot specify both keyFile and keySecret".into());
    }
    for (what, sel) in [("ca", &safe.ca), ("cert", &safe.cert)] {
        if sel.secret.is_some() && sel.config_map.is_some() {
            return Err(format!(
                "SecretOrConfigMap {what}: cannot specify both Secret and ConfigMap"
            ));
        }
    }
    let has_cert = !tls.cert_file.is_empty() || !safe.cert.is_empty();
    let has_key = !tls.key_file.is_empty() || safe.key_secret.is_some();
    if has_cert && !has_key {
        return Err("cannot specify client cert without client key".into());
    }
    if has_key && !has_cert {
        return Err("cannot specify client key without client cert".into());
    }
    if let (Some(max), Some(min)) = (&safe.max_version, &safe.min_version)
        && max < min
    {
        return Err("maxVersion must more than or equal to minVersion".into());
    }
    Ok(())
}

/// `SafeAuthorization.Validate`.
pub fn check_safe_authorization(a: &SafeAuthorization) -> Result<(), String> {
    if a.kind.trim().eq_ignore_ascii_case("basic") {
        return Err(
            "authorization type cannot be set to \"basic\", use \"basicAuth\" instead".into(),
        );
    }
    if a.credentials.is_none() {
        return Err("authorization credentials are required".into());
    }
    Ok(())
}

/// `Authorization.Validate` (scrape classes).
pub fn check_authorization(a: &Authorization) -> Result<(), String> {
    if a.safe.credentials.is_some() && !a.credentials_file.is_empty() {
        return Err(
            "authorization can not specify both \"credentials\" and \"credentialsFile\"".into(),
        );
    }
    if a.safe.kind.trim().eq_ignore_ascii_case("basic") {
        return Err(
            "authorization type cannot be set to \"basic\", use \"basicAuth\" instead".into(),
        );
    }
    Ok(())
}

/// `ProxyConfig.Validate`.
pub fn check_proxy(p: &ProxyConfig) -> Result<(), String> {
    let from_env = p.proxy_from_environment == Some(true);
    let url = p.proxy_url.as_deref().is_some_and(|u| !u.is_empty());
    let no_proxy = p.no_proxy.as_deref().is_some_and(|n| !n.is_empty());
    let headers = p.proxy_connect_header.as_ref();
    if headers.is_some_and(|h| !h.is_empty()) && !from_env && !url {
        return Err(
            "if proxyConnectHeader is configured, proxyUrl or proxyFromEnvironment \
                    must also be configured"
                .into(),
        );
    }
    if from_env && url {
        return Err(
            "if proxyFromEnvironment is configured, proxyUrl must not be configured".into(),
        );
    }
    if from_env && no_proxy {
        return Err("if proxyFromEnvironment is configured, noProxy must not be configured".into());
    }
    if !url && no_proxy {
        return Err("if noProxy is configured, proxyUrl must also be configured".into());
    }
    for (name, selectors) in headers.into_iter().flatten() {
        if selectors.is_empty() {
            return Err(format!(
                "proxyConnetHeader[{name}]: selector must not be empty"
            ));
        }
        for (i, sel) in selectors.iter().enumerate() {
            if sel.name.is_empty() && sel.key.is_empty() {
                return Err(format!(
                    "proxyConnectHeader[{name}][{i}]: selector must be defined"
                ));
            }
        }
    }
    Ok(())
}

/// A scrape timeout no longer than its interval (the section's when the monitor sets
/// none), as `CompareScrapeTimeoutToScrapeInterval` compares them.
pub fn check_interval(interval: &str, timeout: &str, default_interval: &str) -> Result<(), String> {
    if timeout.is_empty() {
        return Ok(());
    }
    let interval = if interval.is_empty() {
        default_interval
    } else {
        interval
    };
    let i = parse_duration(interval)
        .map_err(|e| format!("invalid scrapeInterval {interval:?}: {e}"))?;
    let t =
        parse_duration(timeout).map_err(|e| format!("invalid scrapeTimeout: {timeout:?}: {e}"))?;
    if t > i {
        return Err(format!(
            "scrapeTimeout {timeout:?} greater than scrapeInterval {interval:?}"
        ));
    }
    Ok(())
}

/// The checks that read Secrets and ConfigMaps (the operator's store's `Add…`
/// functions): every reference resolves, certificates and keys are PEM.
impl Credentials<'_> {
    /// `AddBasicAuth`.
    pub fn check_basic_auth(&self, b: Option<&BasicAuth>, field: &str) -> Result<(), Reason> {
        let Some(b) = b else { return Ok(()) };
        self.secret_key(&b.username, &format!("{field}.username"))?;
        self.secret_key(&b.password, &format!("{field}.password"))?;
        Ok(())
    }

    /// `AddSafeAuthorizationCredentials`.
    pub fn check_authorization(
        &self,
        a: Option<&SafeAuthorization>,
        field: &str,
    ) -> Result<(), Reason> {
        let Some(a) = a else { return Ok(()) };
        let Some(credentials) = &a.credentials else {
            return Ok(());
        };
        check_safe_authorization(a).map_err(|why| Reason::invalid(field, why))?;
        if !credentials.name.is_empty() {
            self.secret_key(credentials, &format!("{field}.credentials"))?;
        }
        Ok(())
    }

    /// `AddProxyConfig` with `ProxyConfig.Validate`.
    pub fn check_proxy(&self, p: &ProxyConfig, field: &str) -> Result<(), Reason> {
        check_proxy(p).map_err(|why| Reason::invalid(field, why))?;
        for (name, selectors) in p.proxy_connect_header.iter().flatten() {
            for (i, sel) in selectors.iter().enumerate() {
                self.secret_key(sel, &format!("{field}.proxyConnectHeader[{name}][{i}]"))?;
            }
        }
        Ok(())
    }

    /// `AddOAuth2`.
    pub fn check_oauth2(&self, o: Option<&OAuth2>, field: &str) -> Result<(), Reason> {
        let Some(o) = o else { return Ok(()) };
        let invalid = |why: &str| Reason::invalid(field, why);
        if o.token_url.is_empty() {
            return Err(invalid("OAuth2 tokenURL must be specified"));
        }
        if o.client_id.is_empty() {
            return Err(invalid("OAuth2 clientID must be specified"));
        }
        if o.client_id.secret.is_some() && o.client_id.config_map.is_some() {
            return Err(invalid(
                "invalid OAuth2 clientID: cannot specify both Secret and ConfigMap",
            ));
        }
        if let Some(tls) = &o.tls_config {
            check_safe_tls(tls)
                .map_err(|why| invalid(&format!("invalid OAuth2 tlsConfig: {why}")))?;
        }
        self.either_key(&o.client_id, &format!("{field}.clientId"))?;
        self.secret_key(&o.client_secret, &format!("{field}.clientSecret"))?;
        self.check_proxy(&o.proxy, field)?;
        self.check_safe_tls(o.tls_config.as_ref(), &format!("{field}.tlsConfig"))
    }

    /// `AddSafeTLSConfig`.
    pub fn check_safe_tls(&self, tls: Option<&SafeTlsConfig>, field: &str) -> Result<(), Reason> {
        let Some(tls) = tls else { return Ok(()) };
        check_safe_tls(tls).map_err(|why| {
            Reason::invalid(
                field,
                format!("failed to validate TLS configuration: {why}"),
            )
        })?;
        self.check_tls_assets(tls, field)
    }

    /// `AddTLSConfig`.
    pub fn check_tls(&self, tls: Option<&TlsConfig>, field: &str) -> Result<(), Reason> {
        let Some(tls) = tls else { return Ok(()) };
        check_tls(tls).map_err(|why| {
            Reason::invalid(
                field,
                format!("failed to validate TLS configuration: {why}"),
            )
        })?;
        self.check_tls_assets(&tls.safe, field)
    }

    /// The CA, certificate and key each resolve and are PEM.
    fn check_tls_assets(&self, tls: &SafeTlsConfig, field: &str) -> Result<(), Reason> {
        let ca = self.either_key(&tls.ca, &format!("{field}.ca"))?;
        let cert = self.either_key(&tls.cert, &format!("{field}.cert"))?;
        let key = match &tls.key_secret {
            Some(sel) => self.secret_key(sel, &format!("{field}.keySecret"))?,
            None => Default::default(),
        };
        let ca = ca.expose();
        if !ca.is_empty() && CertificateDer::from_pem_slice(ca.as_bytes()).is_err() {
            return Err(Reason::invalid(
                format!("{field}.ca"),
                format!("ca {}: failed to decode PEM block", tls.ca.describe()),
            ));
        }
        let (cert, key) = (cert.expose(), key.expose());
        if !cert.is_empty() && !key.is_empty() {
            let cert_ok = CertificateDer::from_pem_slice(cert.as_bytes()).is_ok();
            let key_ok = PrivateKeyDer::from_pem_slice(key.as_bytes()).is_ok();
            if !cert_ok || !key_ok {
                return Err(Reason::invalid(
                    format!("{field}.cert"),
                    format!(
                        "cert {}: the certificate or its key is not PEM",
                        tls.cert.describe()
                    ),
                ));
            }
        }
        Ok(())
    }
}
