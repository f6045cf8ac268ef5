//! A realistic pod as a real API server sends it: 3 containers with 2 ports each, 10
//! labels, 5 annotations, conditions, container statuses, and the heavy fields discovery
//! skips (managedFields, env, volumes, probes, resources). About 5 KB of JSON (5,106 bytes for i = 12345).

/// The pod's JSON, compact as the API server writes it; `i` varies its name, IP and uid.
pub fn realistic_pod_json(i: usize) -> String {
    // Written readably below; re-serialised to drop the layout whitespace.
    let pretty = realistic_pod_layout(i);
    match serde_json::from_str::<serde_json::Value>(&pretty) {
        Ok(v) => v.to_string(),
        Err(e) => panic!("the realistic pod template is not JSON: {e}"),
    }
}

fn realistic_pod_layout(i: usize) -> String {
    // The main container carries the usual env, mounts and probe; the two sidecars less.
    let containers: Vec<String> = (0..3)
        .map(|c| {
            let extra = if c == 0 {
                r#","env":[{"name":"LOG_LEVEL","value":"info"},{"name":"POD_NAME","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.name"}}}],
                "volumeMounts":[{"name":"config","mountPath":"/etc/app"}],
                "livenessProbe":{"httpGet":{"path":"/healthz","port":8080,"scheme":"HTTP"},"periodSeconds":10,"failureThreshold":3}"#
            } else {
                ""
            };
            format!(
                r#"{{"name":"container-{c}","image":"registry.example.com/team/app-{c}:v1.{i}.3",
                "ports":[{{"name":"http-{c}","containerPort":{p1},"protocol":"TCP"}},{{"name":"metrics-{c}","containerPort":{p2},"protocol":"TCP"}}],
                "resources":{{"limits":{{"cpu":"500m","memory":"256Mi"}},"requests":{{"cpu":"100m","memory":"128Mi"}}}}{extra},
                "terminationMessagePath":"/dev/termination-log","imagePullPolicy":"IfNotPresent"}}"#,
                p1 = 8080 + c,
                p2 = 9090 + c
            )
        })
        .collect();
    let statuses: Vec<String> = (0..3)
        .map(|c| {
            format!(
                r#"{{"name":"container-{c}","state":{{"running":{{"startedAt":"2026-11-01T10:00:00Z"}}}},"lastState":{{}},"ready":true,"restartCount":0,
                "image":"registry.example.com/team/app-{c}:v1.{i}.3","containerID":"containerd://{i:08x}a28f0800855008485376c1eece1cf61de97cb7026b9188d138b0d55d92fc{c}","started":true}}"#
            )
        })
        .collect();
    format!(
        r#"{{"kind":"Pod","apiVersion":"v1","metadata":{{"name":"app-7d9f8b6c5-{i:05}","generateName":"app-7d9f8b6c5-","namespace":"team-{ns}",
        "uid":"9d328156-75d1-411a-bdd0-{i:012}","resourceVersion":"{rv}","creationTimestamp":"2026-11-01T10:00:00Z",
        "labels":{{"app":"app","app.kubernetes.io/name":"app","app.kubernetes.io/instance":"app-prod","app.kubernetes.io/version":"1.{i}.3",
          "app.kubernetes.io/component":"server","app.kubernetes.io/part-of":"shop","app.kubernetes.io/managed-by":"helm","pod-template-hash":"7d9f8b6c5",
          "team":"payments","tier":"backend"}},
        "annotations":{{"prometheus.io/scrape":"true","prometheus.io/port":"9090","prometheus.io/path":"/metrics",
          "kubectl.kubernetes.io/restartedAt":"2026-11-01T09:59:00Z","cluster-autoscaler.kubernetes.io/safe-to-evict":"true"}},
        "ownerReferences":[{{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"app-7d9f8b6c5","uid":"b48dd901-ead0-476a-b209-d2d908d65109","controller":true,"blockOwnerDeletion":true}}],
        "managedFields":[{{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","time":"2026-11-01T10:00:00Z","fieldsType":"FieldsV1",
          "fieldsV1":{{"f:metadata":{{"f:generateName":{{}},"f:labels":{{".":{{}},"f:app":{{}},"f:pod-template-hash":{{}}}},"f:ownerReferences":{{".":{{}}}}}},
          "f:spec":{{"f:containers":{{}},"f:dnsPolicy":{{}},"f:enableServiceLinks":{{}},"f:restartPolicy":{{}},"f:schedulerName":{{}}}}}}}},
          {{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":"2026-11-01T10:00:05Z","fieldsType":"FieldsV1","subresource":"status",
          "fieldsV1":{{"f:status":{{"f:conditions":{{}},"f:containerStatuses":{{}},"f:podIP":{{}}}}}}}}]}},
        "spec":{{"volumes":[{{"name":"config","configMap":{{"name":"app-config","defaultMode":420}}}},
          {{"name":"kube-api-access","projected":{{"sources":[{{"serviceAccountToken":{{"expirationSeconds":3607,"path":"token"}}}}],"defaultMode":420}}}}],
          "containers":[{containers}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst",
          "serviceAccountName":"app","nodeName":"node-{node:04}","securityContext":{{}},"schedulerName":"default-scheduler",
          "tolerations":[{{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}}],"priority":0,"enableServiceLinks":true}},
        "status":{{"phase":"Running","conditions":[{{"type":"Initialized","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-01T10:00:01Z"}},
          {{"type":"Ready","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-01T10:00:05Z"}},
          {{"type":"ContainersReady","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-01T10:00:05Z"}},
          {{"type":"PodScheduled","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-01T10:00:00Z"}}],
          "hostIP":"192.168.{h1}.{h2}","podIP":"10.{a}.{b}.{c}","podIPs":[{{"ip":"10.{a}.{b}.{c}"}}],"startTime":"2026-11-01T10:00:00Z",
          "containerStatuses":[{statuses}],"qosClass":"Burstable"}}}}"#,
        ns = i % 20,
        rv = 1000 + i,
        node = i % 2000,
        h1 = (i % 2000) / 250,
        h2 = (i % 250) + 1,
        a = (i >> 16) & 255,
        b = (i >> 8) & 255,
        c = i & 255,
        containers = containers.join(","),
        statuses = statuses.join(","),
    )
}
