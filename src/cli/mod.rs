//! The `kubesd` command line: one module per subcommand.

pub mod labels;
pub mod simulate;
