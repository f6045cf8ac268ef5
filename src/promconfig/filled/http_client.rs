//! An HTTP client's settings (`config.HTTPClientConfig` of Prometheus' common
//! library) as Prometheus fills them in and writes them back: in a scrape job and in
//! each of its `kubernetes_sd_configs`. `bearer_token` and `bearer_token_file` become
//! `authorization`, `authorization.type` defaults to `Bearer`, file names are joined
//! with the config's directory, `follow_redirects` and `enable_http2` are always
//! written, and `tls_config` only when it sets something.

use std::path::Path;

use serde_norway::{Mapping, Value};

use super::values::{
    Out, Secrets, boolean, field, join_dir, mapping, secret, sequence, string, strings, url,
};

/// The settings in `map` (a job or a discovery config), written into `out` in
/// Prometheus' order.
pub fn http_client(out: &mut Out, map: &Mapping, dir: &Path, secrets: Secrets) {
    if let Some(auth) = mapping(map, "basic_auth") {
        out.set("basic_auth", basic_auth(auth, dir, secrets));
    }
    if let Some(authorization) = authorization(map, dir, secrets) {
        out.set("authorization", authorization);
    }
    if let Some(oauth2) = mapping(map, "oauth2") {
        out.set("oauth2", oauth2_config(oauth2, dir, secrets));
    }
    if let Some(tls) = tls_config(map, dir, secrets) {
        out.set("tls_config", tls);
    }
    out.set("follow_redirects", boolean(map, "follow_redirects", true));
    out.set("enable_http2", boolean(map, "enable_http2", true));
    proxy(out, map, secrets);
    if let Some(headers) = mapping(map, "http_headers") {
        out.set_nonempty("http_headers", http_headers(headers, dir, secrets));
    }
}

fn basic_auth(auth: &Mapping, dir: &Path, secrets: Secrets) -> Value {
    let mut out = Out::default();
    out.set_nonempty("username", string(auth, "username").into());
    out.set_nonempty(
        "username_file",
        join_dir(dir, &string(auth, "username_file")).into(),
    );
    out.set_nonempty("username_ref", string(auth, "username_ref").into());
    out.set_nonempty("password", secret(string(auth, "password"), secrets));
    out.set_nonempty(
        "password_file",
        join_dir(dir, &string(auth, "password_file")).into(),
    );
    out.set_nonempty("password_ref", string(auth, "password_ref").into());
    out.done()
}

/// `authorization`, or what `bearer_token` or `bearer_token_file` become.
fn authorization(map: &Mapping, dir: &Path, secrets: Secrets) -> Option<Value> {
    let (kind, credentials, file, reference) = match mapping(map, "authorization") {
        Some(a) => (
            string(a, "type").trim().to_string(),
            string(a, "credentials"),
            string(a, "credentials_file"),
            string(a, "credentials_ref"),
        ),
        None => {
            let token = string(map, "bearer_token");
            let file = string(map, "bearer_token_file");
            if token.is_empty() && file.is_empty() {
                return None;
            }
            (String::new(), token, file, String::new())
        }
    };
    let mut out = Out::default();
    out.set(
        "type",
        if kind.is_empty() {
            "Bearer".into()
        } else {
            kind
        },
    );
    out.set_nonempty("credentials", secret(credentials, secrets));
    out.set_nonempty("credentials_file", join_dir(dir, &file).into());
    out.set_nonempty("credentials_ref", reference.into());
    Some(out.done())
}

fn oauth2_config(oauth2: &Mapping, dir: &Path, secrets: Secrets) -> Value {
    let mut out = Out::default();
    let text = |key: &str| Value::from(string(oauth2, key));
    out.set_nonempty("client_id", text("client_id"));
    out.set_nonempty(
        "client_secret",
        secret(string(oauth2, "client_secret"), secrets),
    );
    out.set_nonempty(
        "client_secret_file",
        join_dir(dir, &string(oauth2, "client_secret_file")).into(),
    );
    out.set_nonempty("client_secret_ref", text("client_secret_ref"));
    out.set_nonempty(
        "client_certificate_key_id",
        text("client_certificate_key_id"),
    );
    out.set_nonempty(
        "client_certificate_key",
        secret(string(oauth2, "client_certificate_key"), secrets),
    );
    for key in [
        "client_certificate_key_file",
        "client_certificate_key_ref",
        "grant_type",
        "signature_algorithm",
        "iss",
        "audience",
    ] {
        out.set_nonempty(key, text(key));
    }
    for key in ["claims", "scopes", "token_url", "endpoint_params"] {
        if key == "scopes" {
            out.set_nonempty(key, sequence(strings(oauth2, key)));
        } else {
            out.set_nonempty(key, field(oauth2, key).cloned().unwrap_or(Value::Null));
        }
    }
    if let Some(tls) = tls_config(oauth2, dir, secrets) {
        out.set("tls_config", tls);
    }
    proxy(&mut out, oauth2, secrets);
    out.done()
}

/// `tls_config` of `map`, unless it sets nothing (Prometheus leaves an all-default one
/// out).
fn tls_config(map: &Mapping, dir: &Path, secrets: Secrets) -> Option<Value> {
    let tls = mapping(map, "tls_config")?;
    let mut out = Out::default();
    let text = |key: &str| Value::from(string(tls, key));
    out.set_nonempty("ca", text("ca"));
    out.set_nonempty("cert", text("cert"));
    out.set_nonempty("key", secret(string(tls, "key"), secrets));
    for key in ["ca_file", "cert_file", "key_file"] {
        out.set_nonempty(key, join_dir(dir, &string(tls, key)).into());
    }
    for key in ["ca_ref", "cert_ref", "key_ref", "server_name"] {
        out.set_nonempty(key, text(key));
    }
    let insecure = boolean(tls, "insecure_skip_verify", false);
    out.set("insecure_skip_verify", insecure);
    out.set_nonempty("min_version", text("min_version"));
    out.set_nonempty("max_version", text("max_version"));
    // `insecure_skip_verify` is always written: anything more is a setting.
    (insecure || out.0.len() > 1).then(|| out.done())
}

/// The proxy settings (`config.ProxyConfig`, inline).
fn proxy(out: &mut Out, map: &Mapping, secrets: Secrets) {
    out.set_nonempty("proxy_url", url(&string(map, "proxy_url")).into());
    out.set_nonempty("no_proxy", string(map, "no_proxy").into());
    out.set_nonempty(
        "proxy_from_environment",
        boolean(map, "proxy_from_environment", false).into(),
    );
    if let Some(headers) = mapping(map, "proxy_connect_header") {
        let mut written = Out::default();
        for (name, values) in headers {
            let values: Vec<Value> = (values.as_sequence().into_iter().flatten())
                .map(|v| secret(v.as_str().unwrap_or_default().to_string(), secrets))
                .collect();
            written.0.insert(name.clone(), Value::Sequence(values));
        }
        out.set_nonempty("proxy_connect_header", written.done());
    }
}

/// `http_headers`: per header its `values`, `secrets` and `files`.
fn http_headers(headers: &Mapping, dir: &Path, secrets: Secrets) -> Value {
    let mut out = Out::default();
    for (name, header) in headers {
        let Some(header) = header.as_mapping() else {
            continue;
        };
        let mut written = Out::default();
        written.set_nonempty("values", sequence(strings(header, "values")));
        let hidden: Vec<Value> = (strings(header, "secrets").into_iter())
            .map(|s| secret(s, secrets))
            .collect();
        written.set_nonempty("secrets", Value::Sequence(hidden));
        let files = strings(header, "files")
            .into_iter()
            .map(|f| join_dir(dir, &f));
        written.set_nonempty("files", sequence(files.collect()));
        out.0.insert(name.clone(), written.done());
    }
    out.done()
}
