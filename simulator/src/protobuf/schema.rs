//! The simulator's protobuf schema: for each kind it encodes, which JSON field goes to
//! which field number of the upstream `generated.proto` (core/v1, discovery/v1 and
//! v1beta1, networking/v1, meta/v1), and how. It covers what discovery reads and the
//! bulk of a real object besides (managed fields, resources, mounts, tolerations,
//! conditions, node info), so a client decodes realistic bodies and steps over what it
//! does not read. JSON fields outside the schema are not encoded.

/// One field: its JSON name, its protobuf number, how it is encoded. A JSON array is
/// a repeated field: each element is encoded with the same number.
#[derive(Debug)]
pub struct Field {
    /// The key in the JSON object.
    pub json: &'static str,
    /// The field number.
    pub number: u32,
    /// How the value is encoded.
    pub kind: Kind,
}

/// How a field's JSON value becomes protobuf.
#[derive(Debug)]
pub enum Kind {
    /// A string.
    Str,
    /// An integer (`int32` or `int64`).
    Int,
    /// A boolean.
    Bool,
    /// An embedded message.
    Message(&'static [Field]),
    /// A message whose fields sit in the same JSON object (Go's inlined structs, e.g.
    /// an ingress rule's `ingressRuleValue`); the JSON name is not looked up.
    Inline(&'static [Field]),
    /// `map<string, string>`.
    Map,
    /// `map<string, Quantity>` (resources, capacity): `Quantity` is `{string = 1}`.
    QuantityMap,
    /// `metav1.Time`: RFC 3339 in JSON, `{seconds = 1}` in protobuf.
    Time,
    /// `IntOrString`: `{type = 1, intVal = 2, strVal = 3}`.
    IntOrString,
    /// `FieldsV1`: any JSON, kept as its bytes in field 1.
    RawJson,
}

const fn f(json: &'static str, number: u32, kind: Kind) -> Field {
    Field { json, number, kind }
}

use Kind::{Bool, Int, IntOrString, Map, Message, QuantityMap, RawJson, Str, Time};

/// `metav1.ObjectMeta`.
pub const OBJECT_META: &[Field] = &[
    f("name", 1, Str),
    f("generateName", 2, Str),
    f("namespace", 3, Str),
    f("uid", 5, Str),
    f("resourceVersion", 6, Str),
    f("generation", 7, Int),
    f("creationTimestamp", 8, Time),
    f("deletionTimestamp", 9, Time),
    f("labels", 11, Map),
    f("annotations", 12, Map),
    f("ownerReferences", 13, Message(OWNER_REFERENCE)),
    f("finalizers", 14, Str),
    f("managedFields", 17, Message(MANAGED_FIELDS)),
];

const OWNER_REFERENCE: &[Field] = &[
    f("kind", 1, Str),
    f("name", 3, Str),
    f("uid", 4, Str),
    f("apiVersion", 5, Str),
    f("controller", 6, Bool),
    f("blockOwnerDeletion", 7, Bool),
];

const MANAGED_FIELDS: &[Field] = &[
    f("manager", 1, Str),
    f("operation", 2, Str),
    f("apiVersion", 3, Str),
    f("time", 4, Time),
    f("fieldsType", 6, Str),
    f("fieldsV1", 7, RawJson),
    f("subresource", 8, Str),
];

/// An object with only `metadata` encoded (Namespace, ReplicaSet, Job).
pub const METADATA_ONLY: &[Field] = &[f("metadata", 1, Message(OBJECT_META))];

/// `core/v1.Pod`.
pub const POD: &[Field] = &[
    f("metadata", 1, Message(OBJECT_META)),
    f("spec", 2, Message(POD_SPEC)),
    f("status", 3, Message(POD_STATUS)),
];

const POD_SPEC: &[Field] = &[
    f("volumes", 1, Message(&[f("name", 1, Str)])),
    f("containers", 2, Message(CONTAINER)),
    f("restartPolicy", 3, Str),
    f("terminationGracePeriodSeconds", 4, Int),
    f("dnsPolicy", 6, Str),
    f("nodeSelector", 7, Map),
    f("serviceAccountName", 8, Str),
    f("serviceAccount", 9, Str),
    f("nodeName", 10, Str),
    f("hostNetwork", 11, Bool),
    f("hostname", 16, Str),
    f("subdomain", 17, Str),
    f("schedulerName", 19, Str),
    f("initContainers", 20, Message(CONTAINER)),
    f("tolerations", 22, Message(TOLERATION)),
    f("priority", 25, Int),
    f("enableServiceLinks", 30, Bool),
    f("preemptionPolicy", 31, Str),
];

const CONTAINER: &[Field] = &[
    f("name", 1, Str),
    f("image", 2, Str),
    f("command", 3, Str),
    f("args", 4, Str),
    f("ports", 6, Message(CONTAINER_PORT)),
    f("env", 7, Message(&[f("name", 1, Str), f("value", 2, Str)])),
    f(
        "resources",
        8,
        Message(&[f("limits", 1, QuantityMap), f("requests", 2, QuantityMap)]),
    ),
    f(
        "volumeMounts",
        9,
        Message(&[
            f("name", 1, Str),
            f("readOnly", 2, Bool),
            f("mountPath", 3, Str),
        ]),
    ),
    f("terminationMessagePath", 13, Str),
    f("imagePullPolicy", 14, Str),
    f("terminationMessagePolicy", 20, Str),
    f("restartPolicy", 24, Str),
];

const CONTAINER_PORT: &[Field] = &[
    f("name", 1, Str),
    f("hostPort", 2, Int),
    f("containerPort", 3, Int),
    f("protocol", 4, Str),
    f("hostIP", 5, Str),
];

const TOLERATION: &[Field] = &[
    f("key", 1, Str),
    f("operator", 2, Str),
    f("value", 3, Str),
    f("effect", 4, Str),
    f("tolerationSeconds", 5, Int),
];

const POD_STATUS: &[Field] = &[
    f("phase", 1, Str),
    f("conditions", 2, Message(CONDITION)),
    f("message", 3, Str),
    f("reason", 4, Str),
    f("hostIP", 5, Str),
    f("podIP", 6, Str),
    f("startTime", 7, Time),
    f("containerStatuses", 8, Message(CONTAINER_STATUS)),
    f("qosClass", 9, Str),
    f("initContainerStatuses", 10, Message(CONTAINER_STATUS)),
    f("podIPs", 12, Message(&[f("ip", 1, Str)])),
    f("hostIPs", 16, Message(&[f("ip", 1, Str)])),
];

/// A pod's or node's condition (the numbering is the same up to field 6).
const CONDITION: &[Field] = &[
    f("type", 1, Str),
    f("status", 2, Str),
    f("lastProbeTime", 3, Time),
    f("lastHeartbeatTime", 3, Time),
    f("lastTransitionTime", 4, Time),
    f("reason", 5, Str),
    f("message", 6, Str),
];

const CONTAINER_STATUS: &[Field] = &[
    f("name", 1, Str),
    f("state", 2, Message(CONTAINER_STATE)),
    f("lastState", 3, Message(CONTAINER_STATE)),
    f("ready", 4, Bool),
    f("restartCount", 5, Int),
    f("image", 6, Str),
    f("imageID", 7, Str),
    f("containerID", 8, Str),
    f("started", 9, Bool),
];

const CONTAINER_STATE: &[Field] = &[
    f(
        "waiting",
        1,
        Message(&[f("reason", 1, Str), f("message", 2, Str)]),
    ),
    f("running", 2, Message(&[f("startedAt", 1, Time)])),
    f(
        "terminated",
        3,
        Message(&[
            f("exitCode", 1, Int),
            f("signal", 2, Int),
            f("reason", 3, Str),
            f("message", 4, Str),
            f("startedAt", 5, Time),
            f("finishedAt", 6, Time),
            f("containerID", 7, Str),
        ]),
    ),
];

/// `core/v1.Node`.
pub const NODE: &[Field] = &[
    f("metadata", 1, Message(OBJECT_META)),
    f(
        "spec",
        2,
        Message(&[
            f("podCIDR", 1, Str),
            f("externalID", 2, Str),
            f("providerID", 3, Str),
            f("unschedulable", 4, Bool),
            f("podCIDRs", 7, Str),
        ]),
    ),
    f("status", 3, Message(NODE_STATUS)),
];

const NODE_STATUS: &[Field] = &[
    f("capacity", 1, QuantityMap),
    f("allocatable", 2, QuantityMap),
    f("phase", 3, Str),
    f("conditions", 4, Message(CONDITION)),
    f(
        "addresses",
        5,
        Message(&[f("type", 1, Str), f("address", 2, Str)]),
    ),
    f(
        "daemonEndpoints",
        6,
        Message(&[f(
            "kubeletEndpoint",
            1,
            // Go's JSON decoder matches `Port` case-insensitively; so does this.
            Message(&[f("Port", 1, Int), f("port", 1, Int)]),
        )]),
    ),
    f(
        "nodeInfo",
        7,
        Message(&[
            f("machineID", 1, Str),
            f("systemUUID", 2, Str),
            f("bootID", 3, Str),
            f("kernelVersion", 4, Str),
            f("osImage", 5, Str),
            f("containerRuntimeVersion", 6, Str),
            f("kubeletVersion", 7, Str),
            f("kubeProxyVersion", 8, Str),
            f("operatingSystem", 9, Str),
            f("architecture", 10, Str),
        ]),
    ),
    f(
        "images",
        8,
        Message(&[f("names", 1, Str), f("sizeBytes", 2, Int)]),
    ),
];

/// `core/v1.Service`.
pub const SERVICE: &[Field] = &[
    f("metadata", 1, Message(OBJECT_META)),
    f("spec", 2, Message(SERVICE_SPEC)),
    f(
        "status",
        3,
        Message(&[f(
            "loadBalancer",
            1,
            Message(&[f(
                "ingress",
                1,
                Message(&[f("ip", 1, Str), f("hostname", 2, Str), f("ipMode", 3, Str)]),
            )]),
        )]),
    ),
];

const SERVICE_SPEC: &[Field] = &[
    f(
        "ports",
        1,
        Message(&[
            f("name", 1, Str),
            f("protocol", 2, Str),
            f("port", 3, Int),
            f("targetPort", 4, IntOrString),
            f("nodePort", 5, Int),
            f("appProtocol", 6, Str),
        ]),
    ),
    f("selector", 2, Map),
    f("clusterIP", 3, Str),
    f("type", 4, Str),
    f("externalIPs", 5, Str),
    f("sessionAffinity", 7, Str),
    f("loadBalancerIP", 8, Str),
    f("loadBalancerSourceRanges", 9, Str),
    f("externalName", 10, Str),
    f("externalTrafficPolicy", 11, Str),
    f("healthCheckNodePort", 12, Int),
    f("publishNotReadyAddresses", 13, Bool),
    f("ipFamilyPolicy", 17, Str),
    f("clusterIPs", 18, Str),
    f("ipFamilies", 19, Str),
    f("internalTrafficPolicy", 22, Str),
];

const OBJECT_REFERENCE: &[Field] = &[
    f("kind", 1, Str),
    f("namespace", 2, Str),
    f("name", 3, Str),
    f("uid", 4, Str),
    f("apiVersion", 5, Str),
    f("resourceVersion", 6, Str),
    f("fieldPath", 7, Str),
];

/// `core/v1.Endpoints`.
pub const ENDPOINTS: &[Field] = &[
    f("metadata", 1, Message(OBJECT_META)),
    f(
        "subsets",
        2,
        Message(&[
            f("addresses", 1, Message(ENDPOINT_ADDRESS)),
            f("notReadyAddresses", 2, Message(ENDPOINT_ADDRESS)),
            f(
                "ports",
                3,
                Message(&[
                    f("name", 1, Str),
                    f("port", 2, Int),
                    f("protocol", 3, Str),
                    f("appProtocol", 4, Str),
                ]),
            ),
        ]),
    ),
];

const ENDPOINT_ADDRESS: &[Field] = &[
    f("ip", 1, Str),
    f("targetRef", 2, Message(OBJECT_REFERENCE)),
    f("hostname", 3, Str),
    f("nodeName", 4, Str),
];

/// `discovery/v1.EndpointSlice`.
pub const ENDPOINT_SLICE_V1: &[Field] = &[
    f("metadata", 1, Message(OBJECT_META)),
    f("endpoints", 2, Message(ENDPOINT_V1)),
    f("ports", 3, Message(SLICE_PORT)),
    f("addressType", 4, Str),
];

/// `discovery/v1beta1.EndpointSlice`: its endpoints' field 5 is `topology`.
pub const ENDPOINT_SLICE_V1BETA1: &[Field] = &[
    f("metadata", 1, Message(OBJECT_META)),
    f("endpoints", 2, Message(ENDPOINT_V1BETA1)),
    f("ports", 3, Message(SLICE_PORT)),
    f("addressType", 4, Str),
];

const ENDPOINT_CONDITIONS: &[Field] = &[
    f("ready", 1, Bool),
    f("serving", 2, Bool),
    f("terminating", 3, Bool),
];

const ENDPOINT_V1: &[Field] = &[
    f("addresses", 1, Str),
    f("conditions", 2, Message(ENDPOINT_CONDITIONS)),
    f("hostname", 3, Str),
    f("targetRef", 4, Message(OBJECT_REFERENCE)),
    f("deprecatedTopology", 5, Map),
    f("nodeName", 6, Str),
    f("zone", 7, Str),
];

const ENDPOINT_V1BETA1: &[Field] = &[
    f("addresses", 1, Str),
    f("conditions", 2, Message(ENDPOINT_CONDITIONS)),
    f("hostname", 3, Str),
    f("targetRef", 4, Message(OBJECT_REFERENCE)),
    f("topology", 5, Map),
    f("nodeName", 6, Str),
];

const SLICE_PORT: &[Field] = &[
    f("name", 1, Str),
    f("protocol", 2, Str),
    f("port", 3, Int),
    f("appProtocol", 4, Str),
];

/// `networking/v1.Ingress` (`v1beta1` is numbered alike for these fields).
pub const INGRESS: &[Field] = &[
    f("metadata", 1, Message(OBJECT_META)),
    f(
        "spec",
        2,
        Message(&[
            f(
                "tls",
                2,
                Message(&[f("hosts", 1, Str), f("secretName", 2, Str)]),
            ),
            f("rules", 3, Message(INGRESS_RULE)),
            f("ingressClassName", 4, Str),
        ]),
    ),
];

const INGRESS_RULE: &[Field] = &[
    f("host", 1, Str),
    f(
        "",
        2,
        Kind::Inline(&[f(
            "http",
            1,
            Message(&[f(
                "paths",
                1,
                Message(&[f("path", 1, Str), f("pathType", 3, Str)]),
            )]),
        )]),
    ),
];
