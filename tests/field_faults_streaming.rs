//! Every field-fault scenario of `field_faults.rs` again, with streaming lists forced
//! (`--kubernetes.list-mode stream`): the file reads its crate name to choose.

include!("field_faults.rs");
