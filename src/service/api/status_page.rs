//! The status page at `/`: one HTML file built into the binary, with its style and
//! script inline (no external assets: it works offline and behind the same web
//! config). It reads the JSON endpoints of [`super::kubesd_api`] and
//! [`super::prometheus_api`] and polls them to follow changes.

use super::route::get_or_head;
use actix_web::http::header::CONTENT_TYPE;
use actix_web::{HttpResponse, web};

/// The page.
const PAGE: &str = include_str!("status.html");

/// Adds the route.
pub fn routes(app: &mut web::ServiceConfig) {
    app.route("/", get_or_head().to(page));
}

async fn page() -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((CONTENT_TYPE, "text/html; charset=utf-8"))
        .body(PAGE)
}
