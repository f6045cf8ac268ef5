//! kubesd: Kubernetes service discovery for monitoring agents.

pub mod simulator;
