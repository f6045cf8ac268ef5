//! The service's HTTP server: the endpoints of [`crate::service::api`] behind the web
//! config's checks. Every GET route answers HEAD too; responses are gzip-compressed
//! when the client asks (`Accept-Encoding`). With a web config ([`WebGuard`]), every
//! request passes its checks first, and the listener may speak TLS.

use std::net::SocketAddr;
use std::sync::Arc;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use actix_web::middleware::{Compress, Next, from_fn};
use actix_web::{App, HttpResponse, HttpServer, web};

use super::client_certificate::note_client_certificate;
use crate::service::state::ServiceState;
use crate::service::web::guard::{Decision, WebGuard};

/// The web config's checks, before any handler: credentials and rate limits, then its
/// response headers.
async fn check_access(
    guard: Arc<WebGuard>,
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<actix_web::body::BoxBody>, actix_web::Error> {
    let client = req.peer_addr().map(|a| a.ip());
    let authorization = req
        .headers()
        .get(AUTHORIZATION)
        .map(|v| v.as_bytes().to_vec());
    let decision = guard
        .check(req.path(), client, authorization.as_deref())
        .await;
    let mut response = match decision {
        Decision::Allow => next.call(req).await?.map_into_boxed_body(),
        Decision::Unauthorized => req.into_response(
            HttpResponse::Unauthorized()
                .insert_header((WWW_AUTHENTICATE, "Basic"))
                .body("Unauthorized\n"),
        ),
        Decision::TooManyRequests => {
            req.into_response(HttpResponse::TooManyRequests().body("Too Many Requests\n"))
        }
    };
    for (name, value) in guard.headers() {
        response.headers_mut().insert(name, value);
    }
    Ok(response)
}

/// Binds `listen` and returns the server, to be awaited (or spawned) by the caller.
/// With `web`, requests pass its checks, and the listener speaks TLS if its
/// `tls_server_config` is set.
pub fn serve_http(
    listen: SocketAddr,
    state: Arc<ServiceState>,
    web: Option<Arc<WebGuard>>,
) -> std::io::Result<(actix_web::dev::Server, SocketAddr)> {
    let data = web::Data::from(state);
    let tls = match &web {
        Some(guard) => {
            crate::service::web::tls::server_config(guard).map_err(std::io::Error::other)?
        }
        None => None,
    };
    let app_guard = web.clone();
    let connect_guard = web.clone();
    let server = HttpServer::new(move || {
        let guard = app_guard.clone();
        App::new()
            .app_data(data.clone())
            .wrap(Compress::default())
            .wrap(from_fn(move |req, next| {
                let guard = guard.clone();
                async move {
                    match guard {
                        Some(guard) => check_access(guard, req, next).await,
                        None => Ok(next.call(req).await?.map_into_boxed_body()),
                    }
                }
            }))
            .configure(crate::service::api::routes)
    })
    .on_connect(move |conn, ext| note_client_certificate(conn, ext, connect_guard.as_deref()))
    .workers(1)
    .disable_signals();
    let server = match tls {
        Some(config) => server.bind_rustls_0_23(listen, config)?,
        None => server.bind(listen)?,
    };
    let bound = server.addrs().first().copied().unwrap_or(listen);
    Ok((server.run(), bound))
}
