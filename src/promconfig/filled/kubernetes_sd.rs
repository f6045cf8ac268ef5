//! One `kubernetes_sd_configs` entry as Prometheus fills it in and writes it back
//! (`discovery/kubernetes.SDConfig`): `kubeconfig_file` always, its HTTP client
//! settings, and `namespaces` and `attach_metadata` in full once they set anything.

use std::path::Path;

use serde_norway::{Mapping, Value};

use super::http_client::http_client;
use super::values::{Out, Secrets, boolean, join_dir, mapping, sequence, string, strings, url};

/// The attachments of `attach_metadata`, in Prometheus' order.
const ATTACHMENTS: [&str; 5] = ["node", "namespace", "deployment", "job", "cronjob"];

/// The entry `sd` written as Prometheus writes it.
pub fn kubernetes_sd(sd: &Mapping, dir: &Path, secrets: Secrets) -> Value {
    let mut out = Out::default();
    out.set_nonempty("api_server", url(&string(sd, "api_server")).into());
    out.set("role", string(sd, "role"));
    out.set(
        "kubeconfig_file",
        join_dir(dir, &string(sd, "kubeconfig_file")),
    );
    http_client(&mut out, sd, dir, secrets);
    if let Some(namespaces) = mapping(sd, "namespaces") {
        let own = boolean(namespaces, "own_namespace", false);
        let names = strings(namespaces, "names");
        if own || !names.is_empty() {
            let mut written = Out::default();
            written.set("own_namespace", own);
            written.set("names", sequence(names));
            out.set("namespaces", written.done());
        }
    }
    let selectors: Vec<Value> = (sd.get("selectors").and_then(Value::as_sequence))
        .into_iter()
        .flatten()
        .filter_map(Value::as_mapping)
        .map(|selector| {
            let mut written = Out::default();
            for key in ["role", "label", "field"] {
                written.set_nonempty(key, string(selector, key).into());
            }
            written.done()
        })
        .collect();
    out.set_nonempty("selectors", Value::Sequence(selectors));
    if let Some(attach) = mapping(sd, "attach_metadata") {
        let flags = ATTACHMENTS.map(|key| boolean(attach, key, false));
        if flags.contains(&true) {
            let mut written = Out::default();
            for (key, on) in ATTACHMENTS.into_iter().zip(flags) {
                written.set(key, on);
            }
            out.set("attach_metadata", written.done());
        }
    }
    out.done()
}
