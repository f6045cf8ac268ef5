//! The list/watch wire protocol: list bodies, watch events, `Status` errors, and the
//! framing of a watch stream into lines. Pure and synchronous; the actors drive it.

mod event;
mod framing;
mod lines;
mod list;
mod list_decoder;
mod list_stream;
mod status;

pub use event::{EventType, WatchEvent, decode_bookmark, decode_event};
pub use framing::{EventFraming, decode_event_in, frame_event};
pub use lines::{LineBuffer, LineTooLong};
pub use list::{ListPage, decode_list, decode_list_lenient};
pub use list_decoder::ListDecoder;
pub use list_stream::{ListLimits, ListStream};
pub use status::Status;
