//! The tunnel to the API server through an HTTP proxy; which proxy, and which hosts
//! bypass it, the config decides ([`crate::config::proxy_for`]).
//!
//! awc has no proxy support, so kubesd gives awc a TCP connector of its own
//! ([`TunnelConnector`]): it connects to the proxy, asks it to `CONNECT host:port`
//! (with `Proxy-Authorization` from the proxy URL's user and password, and
//! `proxy_connect_header`), and hands awc the tunnel, over which awc speaks TLS (for
//! `https` servers) and HTTP as if connected directly. Plain `http` servers are
//! reached through the same tunnel.

use std::rc::Rc;

use actix_rt::net::TcpStream;
use actix_service::Service;
use actix_tls::connect::{ConnectError, ConnectInfo, Connection};
use awc::http::Uri;
use futures_util::future::LocalBoxFuture;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::config::ProxyRoute;

/// The longest CONNECT response head kubesd reads from a proxy.
const MAX_RESPONSE_HEAD: usize = 16 * 1024;

/// Opens a tunnel to `host:port` through the proxy: connects, sends `CONNECT`, and
/// returns the stream once the proxy answers 2xx.
pub async fn open_tunnel(route: &ProxyRoute, host: &str, port: u16) -> std::io::Result<TcpStream> {
    let fail = |what: String| std::io::Error::other(format!("proxy {}: {what}", route.address));
    let mut stream = TcpStream::connect(&route.address)
        .await
        .map_err(|e| fail(format!("cannot connect: {e}")))?;
    let target = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let mut request = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n");
    for (name, value) in route.headers() {
        request.push_str(name);
        request.push_str(": ");
        request.push_str(value);
        request.push_str("\r\n");
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await?;
    // Read byte by byte up to the blank line: anything after it is the server's.
    let mut head = Vec::with_capacity(256);
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() >= MAX_RESPONSE_HEAD {
            return Err(fail(format!(
                "CONNECT {target}: response head over {MAX_RESPONSE_HEAD} bytes"
            )));
        }
        if stream.read(&mut byte).await? == 0 {
            return Err(fail(format!(
                "CONNECT {target}: connection closed before an answer"
            )));
        }
        head.push(byte[0]);
    }
    let status_line = String::from_utf8_lossy(&head);
    let status_line = status_line.lines().next().unwrap_or("");
    let code = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse::<u16>().ok());
    match code {
        Some(200..=299) => Ok(stream),
        _ => Err(fail(format!("CONNECT {target} refused: {status_line}"))),
    }
}

/// awc's TCP connector, through a proxy's tunnel.
#[derive(Clone)]
pub struct TunnelConnector {
    route: Rc<ProxyRoute>,
}

impl TunnelConnector {
    /// A connector that tunnels every connection through `route`.
    pub fn new(route: ProxyRoute) -> TunnelConnector {
        TunnelConnector {
            route: Rc::new(route),
        }
    }
}

impl Service<ConnectInfo<Uri>> for TunnelConnector {
    type Response = Connection<Uri, TcpStream>;
    type Error = ConnectError;
    type Future = LocalBoxFuture<'static, Result<Self::Response, Self::Error>>;

    actix_service::always_ready!();

    fn call(&self, req: ConnectInfo<Uri>) -> Self::Future {
        let route = Rc::clone(&self.route);
        Box::pin(async move {
            let host = req.hostname().trim_matches(['[', ']']).to_string();
            let stream = open_tunnel(&route, &host, req.port())
                .await
                .map_err(ConnectError::Io)?;
            Ok(Connection::new(req.request().clone(), stream))
        })
    }
}
