//! Kubernetes' protobuf encoding, read into the same model the JSON path fills.
//!
//! A lean schema of kubesd's own over a small in-place wire reader, not generated
//! types: only the fields discovery reads are decoded, straight into the model's
//! shapes (the same interned strings, the same exact slices), and every other field is
//! stepped over without being built. Generated types (`k8s-pb`, `prost`) would
//! materialise every field of every object, then need a conversion into the model.
//!
//! - `Envelope`: the `k8s\0` magic and `runtime.Unknown` around every body;
//! - [`decode_list`]: a LIST body, whole; [`ProtoListStream`]: the same as it arrives;
//!   [`decode_object`]: one object;
//! - [`FrameBuffer`] and [`decode_event`]: a watch stream's length-prefixed frames.

mod endpoints;
mod endpointslice;
mod envelope;
mod event;
mod fields;
mod frames;
mod ingress;
mod list;
mod list_stream;
mod meta;
mod node;
mod object;
mod pod;
mod reader;
mod service;

pub(crate) use envelope::{Envelope, MAGIC};
pub use event::decode_event;
pub(crate) use event::status;
pub use frames::{FrameBuffer, FrameTooLong};
pub use list::decode_list;
pub use list_stream::ProtoListStream;
pub use object::decode_object;
pub use reader::{Reader, Value, WireError};
