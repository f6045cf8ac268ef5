//! Which HTTP proxy reaches the API server, decided from the config alone: `proxy_url`
//! or, with `proxy_from_environment`, the environment's variables; which hosts bypass
//! it (`no_proxy`, Go's rules); and the CONNECT request's headers. Opening the tunnel is
//! I/O, done by the actors' HTTP client (`kubesd_actors::http`).

use std::net::IpAddr;

use ::http::Uri;
use base64::Engine;

use super::HttpClientConfig;

/// A proxy to tunnel through.
#[derive(Clone, PartialEq, Eq)]
pub struct ProxyRoute {
    /// `host:port` of the proxy.
    pub address: String,
    /// Extra headers of the CONNECT request, `Proxy-Authorization` included if the
    /// proxy URL has a user. Never printed.
    headers: Vec<(String, String)>,
}

impl std::fmt::Debug for ProxyRoute {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Header values may be credentials.
        f.debug_struct("ProxyRoute")
            .field("address", &self.address)
            .field("headers", &self.headers.len())
            .finish()
    }
}

impl ProxyRoute {
    /// The extra headers of the CONNECT request, as `(name, value)`: what the tunnel
    /// sends the proxy. Values may be credentials: never print them.
    pub fn headers(&self) -> &[(String, String)] {
        &self.headers
    }
}

/// A proxy setting that cannot be used, naming the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct ProxyError {
    /// `proxy_url`, `no_proxy`, or the environment variable.
    pub field: String,
    /// What is wrong.
    pub problem: String,
}

/// The proxy for requests to `base_url` (the API server), if any: `proxy_url` unless
/// `no_proxy` exempts the server, or with `proxy_from_environment` the variables Go's
/// `http.ProxyFromEnvironment` reads (`HTTPS_PROXY` for https servers, `HTTP_PROXY` for
/// http ones, and `NO_PROXY`; upper case first, then lower case), through `env`.
pub fn proxy_for(
    http: &HttpClientConfig,
    base_url: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<ProxyRoute>, ProxyError> {
    let (proxy, no_proxy, field) = if http.proxy_from_environment {
        let var = |name: &str| {
            env(name)
                .or_else(|| env(&name.to_lowercase()))
                .filter(|v| !v.is_empty())
        };
        let key = if base_url.starts_with("https://") {
            "HTTPS_PROXY"
        } else {
            "HTTP_PROXY"
        };
        (var(key), var("NO_PROXY"), key.to_string())
    } else {
        (
            http.proxy_url.clone().filter(|p| !p.is_empty()),
            http.no_proxy.clone(),
            "proxy_url".to_string(),
        )
    };
    let Some(proxy) = proxy else {
        return Ok(None);
    };
    let target: Uri = base_url.parse().map_err(|e| ProxyError {
        field: "api_server".into(),
        problem: format!("{base_url:?}: {e}"),
    })?;
    let host = target.host().unwrap_or("").trim_matches(['[', ']']);
    let port = target
        .port_u16()
        .unwrap_or(if target.scheme_str() == Some("https") {
            443
        } else {
            80
        });
    if let Some(list) = &no_proxy
        && bypasses(list, host, port)
    {
        return Ok(None);
    }
    let mut route = parse_proxy_url(&proxy).map_err(|problem| ProxyError { field, problem })?;
    for (name, values) in &http.proxy_connect_header {
        for value in values {
            route
                .headers
                .push((name.clone(), value.expose().to_string()));
        }
    }
    Ok(Some(route))
}

/// Checks a proxy URL without the environment: the errors [`proxy_for`] would give.
pub fn check_proxy_url(url: &str) -> Result<(), String> {
    parse_proxy_url(url).map(|_| ())
}

/// `http://[user[:password]@]host[:port]`: the address to connect to and the
/// `Proxy-Authorization` its user gives.
fn parse_proxy_url(url: &str) -> Result<ProxyRoute, String> {
    let rest = if let Some(rest) = url.strip_prefix("http://") {
        rest
    } else if url.starts_with("https://") {
        return Err(format!(
            "{url:?}: kubesd talks to proxies in plain HTTP (the tunnel to an https API \
             server is still TLS end to end); use an http:// proxy URL"
        ));
    } else {
        return Err(format!("{url:?} is not an http:// URL"));
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let (userinfo, hostport) = match authority.rsplit_once('@') {
        Some((user, host)) => (Some(user), host),
        None => (None, authority),
    };
    if hostport.is_empty() {
        return Err(format!("{url:?} names no host"));
    }
    let address = if hostport.starts_with('[') {
        if hostport.contains("]:") {
            hostport.to_string()
        } else {
            format!("{hostport}:80")
        }
    } else if hostport.contains(':') {
        hostport.to_string()
    } else {
        format!("{hostport}:80")
    };
    let mut headers = Vec::new();
    if let Some(userinfo) = userinfo {
        let decoded =
            percent_decode(userinfo).ok_or_else(|| format!("{url:?}: bad user or password"))?;
        let credentials = base64::engine::general_purpose::STANDARD.encode(decoded);
        headers.push((
            "Proxy-Authorization".to_string(),
            format!("Basic {credentials}"),
        ));
    }
    Ok(ProxyRoute { address, headers })
}

/// `%XX` escapes decoded.
fn percent_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len());
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

/// Whether `no_proxy` (comma-separated, Go's rules) exempts `host:port`: `*` is every
/// host; an IP or CIDR matches addresses; `example.com` matches it and its subdomains,
/// `.example.com` only its subdomains; an entry with `:port` only that port.
pub fn bypasses(no_proxy: &str, host: &str, port: u16) -> bool {
    let host = host.to_ascii_lowercase();
    let ip: Option<IpAddr> = host.parse().ok();
    no_proxy
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .any(|entry| {
            if entry == "*" {
                return true;
            }
            if let Some((net, bits)) = entry.split_once('/') {
                return match (ip, net.parse::<IpAddr>(), bits.parse::<u8>()) {
                    (Some(ip), Ok(net), Ok(bits)) => in_cidr(ip, net, bits),
                    _ => false,
                };
            }
            let (name, entry_port) = match entry.rsplit_once(':') {
                Some((n, p)) if !n.contains(':') || n.ends_with(']') => {
                    (n.trim_matches(['[', ']']), p.parse::<u16>().ok())
                }
                _ => (entry.trim_matches(['[', ']']), None),
            };
            if entry_port.is_some_and(|p| p != port) {
                return false;
            }
            if let (Some(ip), Ok(entry_ip)) = (ip, name.parse::<IpAddr>()) {
                return ip == entry_ip;
            }
            let name = name.to_ascii_lowercase();
            match name.strip_prefix('.') {
                Some(domain) => host.ends_with(&format!(".{domain}")),
                None => host == name || host.ends_with(&format!(".{name}")),
            }
        })
}

fn in_cidr(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(ip), IpAddr::V4(net)) if bits <= 32 => {
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits)
            };
            u32::from(ip) & mask == u32::from(net) & mask
        }
        (IpAddr::V6(ip), IpAddr::V6(net)) if bits <= 128 => {
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits)
            };
            u128::from(ip) & mask == u128::from(net) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_proxy_as_go_reads_it() {
        let list = "localhost, .internal.example, example.com,10.0.0.0/8, 192.168.1.1, [::1], api.corp:6443";
        for (host, port, bypass) in [
            ("localhost", 443, true),
            ("a.internal.example", 443, true),
            ("internal.example", 443, false),
            ("example.com", 443, true),
            ("k8s.example.com", 443, true),
            ("notexample.com", 443, false),
            ("10.1.2.3", 443, true),
            ("11.1.2.3", 443, false),
            ("192.168.1.1", 6443, true),
            ("::1", 443, true),
            ("api.corp", 6443, true),
            ("api.corp", 443, false),
        ] {
            assert_eq!(bypasses(list, host, port), bypass, "{host}:{port}");
        }
        assert!(bypasses("*", "anything", 1));
    }

    #[test]
    fn proxy_urls_and_credentials() {
        let r = parse_proxy_url("http://user:p%40ss@proxy.corp:3128").expect("parses");
        assert_eq!(r.address, "proxy.corp:3128");
        assert_eq!(
            r.headers[0].1,
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode("user:p@ss")
            )
        );
        assert!(!format!("{r:?}").contains("Basic"));
        assert_eq!(
            parse_proxy_url("http://proxy").expect("parses").address,
            "proxy:80"
        );
        assert!(
            parse_proxy_url("https://proxy:3128")
                .unwrap_err()
                .contains("plain HTTP")
        );
        assert!(parse_proxy_url("socks5://proxy:1080").is_err());

        let env = |name: &str| match name {
            "HTTPS_PROXY" => Some("http://envproxy:8080".to_string()),
            "no_proxy" => Some(".local".to_string()),
            _ => None,
        };
        let from_env = HttpClientConfig {
            proxy_from_environment: true,
            ..HttpClientConfig::default()
        };
        let r = proxy_for(&from_env, "https://k8s:6443", &env)
            .expect("ok")
            .expect("a proxy");
        assert_eq!(r.address, "envproxy:8080");
        assert_eq!(
            proxy_for(&from_env, "https://k8s.local:6443", &env),
            Ok(None)
        );
        assert_eq!(
            proxy_for(&from_env, "http://k8s:8080", &env),
            Ok(None),
            "no HTTP_PROXY"
        );
    }
}
