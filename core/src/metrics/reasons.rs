//! The values of the metrics' `reason` and `mode` labels: one enum per label, its
//! values in rendering order, and their label text.

use super::values::Reason;

/// Declares a metric label's values: an enum, its `ALL` values in order and their
/// label text.
macro_rules! reasons {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident => $text:literal,)+ }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)+
        }

        impl $name {
            /// Every value, in the order the metric's samples are rendered.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The label value.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
        }

        impl Reason for $name {
            const ALL: &'static [$name] = $name::ALL;

            fn as_str(self) -> &'static str {
                $name::as_str(self)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

reasons! {
    /// The encoding of a LIST or WATCH response (`kubesd_responses_total{reason}`):
    /// what each role's URLs are read in, per API server.
    ResponseEncoding {
        /// JSON (asked for, or what the server answered a request that preferred
        /// protobuf: custom resources, aggregated APIs, older servers).
        Json => "json",
        /// Kubernetes' protobuf.
        Protobuf => "protobuf",
    }
}

reasons! {
    /// Why a URL watcher started a LIST (`kubesd_relists_total{reason}`).
    RelistReason {
        /// The watcher's first LIST.
        Initial => "initial",
        /// 410 Gone: the watch's resourceVersion or the list's continue token expired.
        Gone => "gone",
        /// A watch event was rejected: a change may have been missed.
        BadEvent => "bad_event",
        /// The previous LIST failed.
        Retry => "retry",
        /// The periodic safety-net relist (`EngineOptions::relist_interval`).
        Resync => "resync",
        /// The previous LIST had no resourceVersion to watch from.
        NoResourceVersion => "no_resource_version",
        /// 404 on the role's current API version: the older one is tried.
        FallBack => "fall_back",
    }
}

reasons! {
    /// Why a LIST or WATCH request failed (`kubesd_request_errors_total{reason}`).
    RequestError {
        /// The connection failed, timed out, or broke mid-body.
        Connection => "connection",
        /// 400: the request itself is wrong (a selector the server refuses).
        BadRequest => "bad_request",
        /// 401: the credentials were refused.
        Unauthorized => "unauthorized",
        /// 403: the credentials may not list or watch this resource.
        Forbidden => "forbidden",
        /// 404 with no older API version to fall back to.
        NotFound => "not_found",
        /// 429: the server asks to slow down.
        Throttled => "throttled",
        /// 5xx.
        ServerError => "server_error",
        /// Any other status.
        OtherStatus => "other_status",
        /// A LIST body that is not a whole list of the role (wrong kind, truncated,
        /// undecodable, over `max_list_body`).
        BadBody => "bad_body",
        /// A watch `ERROR` event other than 410.
        ErrorEvent => "error_event",
        /// A watch the server ended cleanly before it had been healthy for
        /// `EngineOptions::healthy_after`.
        ShortWatch => "short_watch",
        /// No credential to send: a kubeconfig credential plugin failed or has not
        /// answered yet (no request was made).
        Credentials => "credentials",
        /// A LIST attempt whose pages did not end within
        /// `EngineOptions::max_list_pages`, or came round again, or that was
        /// redirected back to a URL it had already asked for.
        EndlessList => "endless_list",
    }
}

reasons! {
    /// Why an object (a list item or a watch event) was rejected
    /// (`kubesd_rejected_objects_total{reason}`).
    RejectReason {
        /// Not JSON, or JSON of the wrong shape (no name, unknown event type, ...).
        Undecodable => "undecodable",
        /// An object of another kind than the role's.
        WrongKind => "wrong_kind",
        /// Larger than `EngineOptions::max_object_size`.
        TooLarge => "too_large",
        /// Nested deeper than `EngineOptions::max_json_depth`.
        TooDeep => "too_deep",
    }
}

reasons! {
    /// What stalled (`kubesd_stalls_total{reason}`): a stream that stopped making
    /// progress mid-object for longer than `EngineOptions::progress_deadline`.
    StallReason {
        /// A watch line stayed incomplete.
        Watch => "watch",
        /// A LIST body found no next item.
        List => "list",
    }
}

reasons! {
    /// How a URL watcher gets a URL's state (`kubesd_list_mode_watchers{mode}`).
    ListMethod {
        /// A streaming list: a watch with `sendInitialEvents=true` whose initial
        /// events end at the `k8s.io/initial-events-end` bookmark.
        Streaming => "streaming",
        /// A LIST request, then a watch from its resourceVersion.
        List => "list",
    }
}
