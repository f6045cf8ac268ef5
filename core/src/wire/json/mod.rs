//! The list/watch protocol in JSON: list bodies, watch events, and the framing of a
//! watch stream into lines.

mod event;
mod lines;
mod list;
mod list_stream;

pub use event::{EventType, WatchEvent, decode_bookmark, decode_event};
pub use lines::{LineBuffer, LineTooLong};
pub use list::{ListPage, decode_list, decode_list_lenient};
pub use list_stream::{ListLimits, ListStream};
