//! Per-role behaviour beyond the corpus: decoding of bad objects (errors, never panics)
//! and the label rules each role documents.

use kubesd::model::{Object, Role};
use kubesd::targets::{AttachMetadata, EmptyCache, TargetContext, target_labels};
use kubesd::{DecodeError, Labels};

fn targets(role: Role, json: &str) -> Vec<Labels> {
    let object = Object::decode(role, json.as_bytes()).expect("object decodes");
    let ctx = TargetContext {
        semantics: kubesd::Semantics::VictoriaMetrics,
        attach: AttachMetadata::default(),
        cache: &EmptyCache,
    };
    target_labels(&object, &ctx)
}

fn addresses(ts: &[Labels]) -> Vec<&str> {
    ts.iter()
        .map(|t| t.get("__address__").unwrap_or(""))
        .collect()
}

#[test]
fn every_role_rejects_an_object_without_a_name() {
    for role in Role::ALL {
        let err = Object::decode(role, br#"{"metadata":{"namespace":"ns"}}"#).unwrap_err();
        assert!(
            matches!(err, DecodeError::MissingName { .. }),
            "{role}: {err}"
        );
        assert!(err.to_string().contains(role.as_str()), "{err}");
    }
}

#[test]
fn wrong_types_are_errors_naming_the_role() {
    let cases: [(Role, &str); 6] = [
        (
            Role::Pod,
            r#"{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","ports":[{"containerPort":"80"}]}]}}"#,
        ),
        (
            Role::Service,
            r#"{"metadata":{"name":"s"},"spec":{"ports":[{"port":"http"}]}}"#,
        ),
        (
            Role::Node,
            r#"{"metadata":{"name":"n"},"status":{"addresses":{"type":"InternalIP"}}}"#,
        ),
        (
            Role::Endpoints,
            r#"{"metadata":{"name":"e"},"subsets":"none"}"#,
        ),
        (
            Role::EndpointSlice,
            r#"{"metadata":{"name":"e"},"endpoints":[{"addresses":[1]}]}"#,
        ),
        (Role::Ingress, r#"{"metadata":{"name":"i","labels":[1]}}"#),
    ];
    for (role, json) in cases {
        let err = Object::decode(role, json.as_bytes()).unwrap_err();
        assert!(
            matches!(err, DecodeError::Json { role: r, .. } if r == role),
            "{role}: {err}"
        );
        assert!(err.to_string().contains(role.as_str()), "{err}");
    }
    // Not JSON at all, and JSON that is not an object.
    assert!(Object::decode(Role::Pod, b"{\"metadata\":").is_err());
    assert!(Object::decode(Role::Pod, b"null").is_err());
    assert!(Object::decode(Role::Pod, b"[]").is_err());
}

#[test]
fn null_lists_are_empty_as_in_go() {
    let ts = targets(
        Role::Pod,
        r#"{"metadata":{"name":"p","namespace":"n","labels":null},
            "spec":{"containers":[{"name":"c","ports":null}],"initContainers":null},
            "status":{"podIP":"10.0.0.1","phase":"Running","conditions":null,"containerStatuses":null}}"#,
    );
    assert_eq!(addresses(&ts), ["10.0.0.1"]);
    assert_eq!(ts[0].get("__meta_kubernetes_pod_ready"), Some("unknown"));
}

#[test]
fn pod_targets_per_port_skip_finished_pods_and_terminated_containers() {
    let pod = |phase: &str| {
        format!(
            r#"{{"metadata":{{"name":"p","namespace":"n","uid":"u1",
                "ownerReferences":[{{"kind":"ReplicaSet","name":"rs","controller":false}},{{"kind":"StatefulSet","name":"ss","controller":true}}]}},
             "spec":{{"nodeName":"n1","containers":[
                {{"name":"a","image":"img:a","ports":[{{"name":"http","containerPort":80,"protocol":"TCP"}},{{"containerPort":9090,"protocol":"TCP"}}]}},
                {{"name":"b","image":"img:b"}},
                {{"name":"done","ports":[{{"containerPort":7}}]}}]}},
             "status":{{"phase":"{phase}","podIP":"10.1.2.3","hostIP":"192.168.0.1",
                "conditions":[{{"type":"Ready","status":"False"}}],
                "containerStatuses":[{{"name":"a","containerID":"containerd://abc"}},{{"name":"done","state":{{"terminated":{{"exitCode":0}}}}}}]}}}}"#
        )
    };
    let ts = targets(Role::Pod, &pod("Running"));
    assert_eq!(addresses(&ts), ["10.1.2.3:80", "10.1.2.3:9090", "10.1.2.3"]);
    assert_eq!(
        ts[0].get("__meta_kubernetes_pod_container_id"),
        Some("containerd://abc")
    );
    assert_eq!(
        ts[0].get("__meta_kubernetes_pod_controller_kind"),
        Some("StatefulSet")
    );
    assert_eq!(ts[0].get("__meta_kubernetes_pod_ready"), Some("false"));
    assert_eq!(ts[2].get("__meta_kubernetes_pod_container_name"), Some("b"));
    assert_eq!(
        ts[2].get("__meta_kubernetes_pod_container_port_number"),
        None
    );
    assert!(targets(Role::Pod, &pod("Succeeded")).is_empty());
    assert!(targets(Role::Pod, &pod("Failed")).is_empty());
}

#[test]
fn node_address_priority_and_kubelet_port() {
    let ts = targets(
        Role::Node,
        r#"{"metadata":{"name":"n1","labels":{"topology.kubernetes.io/zone":"z1"}},
            "status":{"addresses":[{"type":"Hostname","address":"host1"},{"type":"ExternalIP","address":"1.2.3.4"},
                                   {"type":"ExternalIP","address":"5.6.7.8"}],
                      "daemonEndpoints":{"kubeletEndpoint":{"port":10250}}}}"#,
    );
    assert_eq!(addresses(&ts), ["1.2.3.4:10250"]);
    assert_eq!(ts[0].get("instance"), Some("n1"));
    assert_eq!(
        ts[0].get("__meta_kubernetes_node_address_ExternalIP"),
        Some("1.2.3.4")
    );
    assert_eq!(
        ts[0].get("__meta_kubernetes_node_label_topology_kubernetes_io_zone"),
        Some("z1")
    );
    assert!(targets(Role::Node, r#"{"metadata":{"name":"bare"}}"#).is_empty());
}

#[test]
fn service_targets_and_external_name() {
    let ts = targets(
        Role::Service,
        r#"{"metadata":{"name":"web","namespace":"shop"},
            "spec":{"type":"ExternalName","externalName":"web.example.com","ports":[{"name":"http","port":80,"protocol":"TCP"}]}}"#,
    );
    assert_eq!(addresses(&ts), ["web.shop.svc:80"]);
    assert_eq!(
        ts[0].get("__meta_kubernetes_service_external_name"),
        Some("web.example.com")
    );
    assert_eq!(ts[0].get("__meta_kubernetes_service_cluster_ip"), None);
}

#[test]
fn ingress_scheme_follows_tls_hosts_and_wildcards() {
    let ts = targets(
        Role::Ingress,
        r#"{"metadata":{"name":"i","namespace":"n"},
            "spec":{"tls":[{"hosts":["*.example.com"]}],
                    "rules":[{"host":"a.example.com","http":{"paths":[{"path":"/x"},{"path":""}]}},
                             {"host":"a.b.example.com"},{"host":"other.org","http":{"paths":[{"path":"/"}]}}]}}"#,
    );
    let got: Vec<(&str, &str, &str)> = ts
        .iter()
        .map(|t| {
            (
                t.get("__address__").unwrap_or(""),
                t.get("__meta_kubernetes_ingress_scheme").unwrap_or(""),
                t.get("__meta_kubernetes_ingress_path").unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("a.example.com", "https", "/x"),
            ("a.example.com", "https", "/"),
            ("a.b.example.com", "http", "/"),
            ("other.org", "http", "/"),
        ]
    );
}

#[test]
fn endpoints_ready_and_not_ready_addresses() {
    let ts = targets(
        Role::Endpoints,
        r#"{"metadata":{"name":"web","namespace":"n"},
            "subsets":[{"addresses":[{"ip":"10.0.0.1","nodeName":"n1","targetRef":{"kind":"Pod","name":"p1","namespace":"n"}}],
                        "notReadyAddresses":[{"ip":"fd00::2"}],
                        "ports":[{"name":"http","port":8080,"protocol":"TCP"}]}]}"#,
    );
    assert_eq!(addresses(&ts), ["10.0.0.1:8080", "[fd00::2]:8080"]);
    assert_eq!(ts[0].get("__meta_kubernetes_endpoint_ready"), Some("true"));
    assert_eq!(
        ts[0].get("__meta_kubernetes_endpoint_address_target_name"),
        Some("p1")
    );
    assert_eq!(ts[1].get("__meta_kubernetes_endpoint_ready"), Some("false"));
}

#[test]
fn endpointslice_conditions_default_to_false() {
    let ts = targets(
        Role::EndpointSlice,
        r#"{"metadata":{"name":"web-abc","namespace":"n","labels":{"kubernetes.io/service-name":"web"}},
            "addressType":"IPv4",
            "endpoints":[{"addresses":["10.0.0.1"],"conditions":{"ready":true,"serving":null}}],
            "ports":[{"name":"http","port":80,"protocol":"TCP","appProtocol":"http"}]}"#,
    );
    assert_eq!(addresses(&ts), ["10.0.0.1:80"]);
    let t = &ts[0];
    assert_eq!(
        t.get("__meta_kubernetes_endpointslice_endpoint_conditions_ready"),
        Some("true")
    );
    assert_eq!(
        t.get("__meta_kubernetes_endpointslice_endpoint_conditions_serving"),
        Some("false")
    );
    assert_eq!(
        t.get("__meta_kubernetes_endpointslice_endpoint_conditions_terminating"),
        Some("false")
    );
    assert_eq!(
        t.get("__meta_kubernetes_endpointslice_port_app_protocol"),
        Some("http")
    );
}

#[test]
fn an_object_of_another_kind_is_rejected() {
    let err = Object::decode(
        Role::Pod,
        br#"{"kind":"Service","metadata":{"name":"s","namespace":"n"}}"#,
    )
    .unwrap_err();
    assert!(
        matches!(&err, DecodeError::WrongKind { role: Role::Pod, kind } if kind == "Service"),
        "{err}"
    );
    // The right kind, or none (list items usually carry none), is fine.
    assert!(Object::decode(Role::Pod, br#"{"kind":"Pod","metadata":{"name":"p"}}"#).is_ok());
    assert!(
        Object::decode(
            Role::EndpointSlice,
            br#"{"kind":"EndpointSlice","metadata":{"name":"e"}}"#
        )
        .is_ok()
    );
    // And a listed object equals the same object from a watch event, kind or not.
    let listed = Object::decode(Role::Pod, br#"{"metadata":{"name":"p"}}"#).unwrap();
    let watched = Object::decode(Role::Pod, br#"{"kind":"Pod","metadata":{"name":"p"}}"#).unwrap();
    assert_eq!(listed, watched);
}

/// `target_labels_after` (the group's path for a changed pod: old own parts reused) gives
/// exactly the labels a fresh `target_labels` does, for every kind of change, including
/// the ones that must not reuse anything.
#[test]
fn a_changed_pod_gets_the_same_labels_whether_or_not_parts_are_reused() {
    use kubesd::targets::{ObjectCache, target_labels_after};
    let node = Object::decode(
        Role::Node,
        br#"{"metadata":{"name":"n1","labels":{"zone":"a"}},"status":{"addresses":[{"type":"InternalIP","address":"192.168.0.1"}]}}"#,
    )
    .expect("node decodes");
    let cache = ObjectCache::from_objects([&node]);
    let ctx = TargetContext {
        semantics: kubesd::Semantics::VictoriaMetrics,
        attach: AttachMetadata {
            node: true,
            namespace: false,
            ..AttachMetadata::default()
        },
        cache: &cache,
    };
    let base: serde_json::Value = serde_json::from_str(
        r#"{"metadata":{"name":"p","namespace":"ns","uid":"u1","labels":{"app":"a"},"annotations":{"seq":"1"},
            "ownerReferences":[{"kind":"ReplicaSet","name":"rs","controller":true}]},
           "spec":{"nodeName":"n1","containers":[
              {"name":"c1","image":"i:1","ports":[{"name":"http","containerPort":80},{"containerPort":9090,"protocol":"TCP"}]},
              {"name":"c2","image":"i:2"}],
             "initContainers":[{"name":"side","image":"s:1","restartPolicy":"Always","ports":[{"containerPort":7070}]}]},
           "status":{"phase":"Running","podIP":"10.0.0.1","hostIP":"192.168.0.1",
             "conditions":[{"type":"Ready","status":"True"}],
             "containerStatuses":[{"name":"c1","containerID":"containerd://a","state":{"running":{}}},
                                  {"name":"c2","containerID":"containerd://b","state":{"running":{}}}],
             "initContainerStatuses":[{"name":"side","containerID":"containerd://s","state":{"running":{}}}]}}"#,
    )
    .expect("valid JSON");
    type Change = fn(&mut serde_json::Value);
    let changes: [(&str, Change); 10] = [
        ("annotation", |p| {
            p["metadata"]["annotations"]["seq"] = "2".into()
        }),
        ("label", |p| p["metadata"]["labels"]["app"] = "b".into()),
        ("ready", |p| {
            p["status"]["conditions"][0]["status"] = "False".into()
        }),
        ("node", |p| p["spec"]["nodeName"] = "n2".into()),
        ("ip", |p| p["status"]["podIP"] = "10.0.0.2".into()),
        ("finished", |p| p["status"]["phase"] = "Succeeded".into()),
        ("no ip", |p| p["status"]["podIP"] = "".into()),
        ("port", |p| {
            p["spec"]["containers"][0]["ports"][1]["containerPort"] = 9091.into()
        }),
        ("container id", |p| {
            p["status"]["containerStatuses"][1]["containerID"] = "containerd://c".into()
        }),
        ("terminated", |p| {
            p["status"]["containerStatuses"][0]["state"] = serde_json::json!({"terminated": {}})
        }),
    ];
    let decode = |v: &serde_json::Value| {
        Object::decode(Role::Pod, v.to_string().as_bytes()).expect("pod decodes")
    };
    let old = decode(&base);
    let old_targets = target_labels(&old, &ctx);
    assert_eq!(
        old_targets.len(),
        4,
        "three ports and one port-less container"
    );
    for (what, change) in changes {
        let mut v = base.clone();
        change(&mut v);
        let new = decode(&v);
        let fresh = target_labels(&new, &ctx);
        let reused = target_labels_after(&new, &ctx, Some((&old, &old_targets)));
        assert_eq!(reused, fresh, "{what}");
        let flat = |ts: &[Labels]| -> Vec<Vec<(String, String)>> {
            ts.iter()
                .map(|t| {
                    t.iter()
                        .map(|l| (l.name.to_string(), l.value.to_string()))
                        .collect()
                })
                .collect()
        };
        assert_eq!(flat(&reused), flat(&fresh), "{what}: label by label");
    }
}
