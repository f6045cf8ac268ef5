//! A scrape's HTTP client in Prometheus' keys, credentials read from the monitor's
//! Secrets and ConfigMaps and written inline (as the target allocator has the operator
//! write them): `tls_config`, `basic_auth`, `authorization`, `oauth2` and the proxy.
//!
//! A reference that does not resolve here was let through by the checks (a scrape
//! class's, which the operator does not check): as the operator does, the key is left
//! out, and a warning says so.

use kubesd_core::config::Secret;
use kubesd_core::monitors::{
    Authorization, BasicAuth, OAuth2, ProxyConfig, SafeAuthorization, SafeTlsConfig,
    SecretKeySelector, TlsConfig,
};

use super::error::Reason;
use super::store::Credentials;
use super::yaml::{Map, sorted, strings};

/// Where generation writes: the monitor's credentials and the warnings so far.
pub struct Writer<'a> {
    /// The monitor's namespace's Secrets and ConfigMaps.
    pub creds: Credentials<'a>,
    /// References that did not resolve, each in a sentence.
    pub warnings: Vec<String>,
}

impl Writer<'_> {
    /// A value read, or `None` and a warning.
    fn read(&mut self, result: Result<Secret, Reason>, what: &str) -> Option<String> {
        match result {
            Ok(secret) => Some(secret.expose().to_string()),
            Err(reason) => {
                self.warnings
                    .push(format!("invalid {what} reference: {reason}"));
                None
            }
        }
    }

    /// `basic_auth`; a value that does not resolve is written empty, as the operator
    /// writes it.
    pub fn basic_auth(&mut self, cfg: &mut Map, b: Option<&BasicAuth>) {
        let Some(b) = b else { return };
        let creds = self.creds;
        let user = creds.secret_key(&b.username, "basicAuth.username");
        let password = creds.secret_key(&b.password, "basicAuth.password");
        let mut auth = Map::new();
        auth.put("username", self.read(user, "username").unwrap_or_default());
        auth.put(
            "password",
            self.read(password, "password").unwrap_or_default(),
        );
        cfg.put("basic_auth", auth);
    }

    /// `bearer_token` from a Secret, when one is named.
    pub fn bearer_token(&mut self, cfg: &mut Map, sel: Option<&SecretKeySelector>) {
        let Some(sel) = sel.filter(|s| !s.name.is_empty()) else {
            return;
        };
        let token = self.creds.secret_key(sel, "bearerTokenSecret");
        if let Some(token) = self.read(token, "bearer token") {
            cfg.put("bearer_token", token);
        }
    }

    /// `authorization` from its Secret: `type` (default `Bearer`), `credentials`.
    pub fn safe_authorization(&mut self, cfg: &mut Map, a: Option<&SafeAuthorization>) {
        let Some(a) = a else { return };
        let auth = self.authorization_map(a);
        cfg.put("authorization", auth);
    }

    fn authorization_map(&mut self, a: &SafeAuthorization) -> Map {
        let kind = if a.kind.is_empty() { "Bearer" } else { &a.kind };
        let mut auth = Map::new();
        auth.put("type", kind.trim());
        if let Some(sel) = &a.credentials {
            let value = self.creds.secret_key(sel, "authorization.credentials");
            if let Some(value) = self.read(value, "credentials") {
                auth.put("credentials", value);
            }
        }
        auth
    }

    /// `authorization`, which may also name a file (a scrape class's).
    pub fn authorization(&mut self, cfg: &mut Map, a: Option<&Authorization>) {
        let Some(a) = a else { return };
        let mut auth = self.authorization_map(&a.safe);
        if !a.credentials_file.is_empty() {
            auth.put("credentials_file", a.credentials_file.as_str());
        }
        cfg.put("authorization", auth);
    }

    /// `oauth2`; left out whole if its client id or secret does not resolve.
    pub fn oauth2(&mut self, cfg: &mut Map, o: Option<&OAuth2>) {
        let Some(o) = o else { return };
        let creds = self.creds;
        let id = creds.either_key(&o.client_id, "oauth2.clientId");
        let Some(id) = self.read(id, "OAuth2 client ID") else {
            return;
        };
        let secret = creds.secret_key(&o.client_secret, "oauth2.clientSecret");
        let Some(secret) = self.read(secret, "OAuth2 client secret") else {
            return;
        };
        let mut oauth = Map::new();
        oauth.put("client_id", id);
        oauth.put("client_secret", secret);
        oauth.put("token_url", o.token_url.as_str());
        if !o.scopes.is_empty() {
            oauth.put("scopes", strings(&o.scopes));
        }
        if !o.endpoint_params.is_empty() {
            oauth.put("endpoint_params", sorted(&o.endpoint_params));
        }
        self.proxy(&mut oauth, &o.proxy);
        self.safe_tls(&mut oauth, o.tls_config.as_ref());
        cfg.put("oauth2", oauth);
    }

    /// The proxy keys, each when set; a header value that does not resolve is empty.
    pub fn proxy(&mut self, cfg: &mut Map, p: &ProxyConfig) {
        if p.is_zero() {
            return;
        }
        cfg.put_some("proxy_url", p.proxy_url.clone());
        cfg.put_some("no_proxy", p.no_proxy.clone());
        cfg.put_some("proxy_from_environment", p.proxy_from_environment);
        let Some(headers) = &p.proxy_connect_header else {
            return;
        };
        let mut out = Map::new();
        for (name, selectors) in headers {
            let values: Vec<String> = selectors
                .iter()
                .map(|sel| {
                    self.creds
                        .secret_key(sel, "proxyConnectHeader")
                        .map(|s| s.expose().to_string())
                        .unwrap_or_default()
                })
                .collect();
            out.put(name, strings(&values));
        }
        cfg.put("proxy_connect_header", out);
    }

    /// `tls_config` from Secrets and ConfigMaps, CA, certificate and key inline.
    pub fn safe_tls(&mut self, cfg: &mut Map, tls: Option<&SafeTlsConfig>) {
        let Some(tls) = tls else { return };
        let map = self.safe_tls_map(tls);
        cfg.put("tls_config", map);
    }

    fn safe_tls_map(&mut self, tls: &SafeTlsConfig) -> Map {
        let creds = self.creds;
        let mut out = Map::new();
        out.put_some("insecure_skip_verify", tls.insecure_skip_verify);
        if !tls.ca.is_empty() {
            let ca = creds.either_key(&tls.ca, "tlsConfig.ca");
            out.put_some("ca", self.read(ca, "CA"));
        }
        if !tls.cert.is_empty() {
            let cert = creds.either_key(&tls.cert, "tlsConfig.cert");
            out.put_some("cert", self.read(cert, "cert"));
        }
        if let Some(sel) = &tls.key_secret {
            let key = creds.secret_key(sel, "tlsConfig.keySecret");
            out.put_some("key", self.read(key, "key"));
        }
        if let Some(name) = tls.server_name.as_deref().filter(|n| !n.is_empty()) {
            out.put("server_name", name);
        }
        out.put_some("min_version", tls.min_version.clone());
        out.put_some("max_version", tls.max_version.clone());
        out
    }

    /// `tls_config` that may also name files.
    pub fn tls(&mut self, cfg: &mut Map, tls: Option<&TlsConfig>) {
        let Some(tls) = tls else { return };
        let mut out = self.safe_tls_map(&tls.safe);
        for (key, file) in [
            ("ca_file", &tls.ca_file),
            ("cert_file", &tls.cert_file),
            ("key_file", &tls.key_file),
        ] {
            if !file.is_empty() {
                out.put(key, file.as_str());
            }
        }
        cfg.put("tls_config", out);
    }
}
