//! The `kubesd` command line: one module per subcommand.

pub mod demo;
pub mod explain;
pub mod labels;
pub mod logfmt;
pub mod logging;
pub mod run;
pub mod simulate;
