//! kubesd: Kubernetes service discovery for monitoring agents.
