//! The wire: what the API server sends, in either of its encodings, read into the
//! model. Pure and synchronous; the actors drive it.
//!
//! - [`json`]: list bodies, watch events one per line, a LIST decoded as it arrives;
//! - [`proto`]: the same in Kubernetes' protobuf encoding;
//! - here, what picks one of them per response: [`Encoding`] (from its
//!   `Content-Type`), [`EventFraming`] (a watch stream into events), [`ListDecoder`] (a
//!   LIST body into objects), and [`Status`] (an error body in either encoding).

mod buffer;
mod content_type;
mod framing;
pub mod json;
mod list_decoder;
pub mod proto;
mod status;
mod status_body;

pub use content_type::{ACCEPT_PROTOBUF, Encoding, PROTOBUF, UnknownContentType};
pub use framing::{EventFraming, decode_event_in};
pub use list_decoder::ListDecoder;
pub use status::Status;
