//! Which methods a read-only endpoint answers.

use actix_web::{guard, web};

/// GET, and HEAD (answered as GET, without the body).
pub fn get_or_head() -> actix_web::Route {
    web::route().guard(guard::Any(guard::Get()).or(guard::Head()))
}
