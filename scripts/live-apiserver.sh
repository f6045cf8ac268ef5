#!/usr/bin/env bash
# A real Kubernetes API server on 127.0.0.1, for kubesd's live suite (tests/live.rs):
# etcd, kube-apiserver with an audit log, and a kube-controller-manager running only the
# endpoints, endpointslice, endpointslice-mirroring and garbage-collector controllers
# (with no kubelet, the node-lifecycle controller would evict every pod).
#
#   scripts/live-apiserver.sh start           certificates, tokens, etcd, API server,
#                                             controllers; prints the suite's environment
#   scripts/live-apiserver.sh restart-compacted
#                                             restart the API server without its watch cache,
#                                             etcd compacted past every resourceVersion a
#                                             client holds: every watch resumed gets a 410
#   scripts/live-apiserver.sh restart         restart the API server (watch cache on): every
#                                             client resumes or lists again
#   scripts/live-apiserver.sh populate PODS [SERVICES] [NODES]
#                                             a load for the benchmarks, in the namespace
#                                             kubesd-load: PODS pods (Running, Ready, with
#                                             IPs; no kubelet runs them) behind SERVICES
#                                             services (100), on NODES nodes (100)
#   scripts/live-apiserver.sh apiserver-pid   the API server's process id (its CPU time and
#                                             memory are in /proc/PID/stat and status)
#   scripts/live-apiserver.sh env             print the suite's environment again
#   scripts/live-apiserver.sh stop            stop what `start` started
#
# The script builds nothing and downloads nothing but Debian's etcd packages when no etcd
# is found. It is given kube-apiserver and kube-controller-manager binaries in
# $KUBESD_LIVE_BIN (default $KUBESD_LIVE_DIR/bin), and uses the etcd there if there is
# one, else the etcd on PATH. The API server serves streaming lists only on etcd 3.5.13+
# or 3.4.31+ (it needs their watch progress requests); on an older etcd it ends every
# streaming list at once, and clients fall back to LIST. Everything lives in $KUBESD_LIVE_DIR
# (default /tmp/kubesd-live); ports: $KUBESD_LIVE_PORT (API server, 16443),
# $KUBESD_LIVE_ETCD_PORT (etcd clients, 23790; peers on the next port).

set -euo pipefail

DIR=${KUBESD_LIVE_DIR:-/tmp/kubesd-live}
PORT=${KUBESD_LIVE_PORT:-16443}
ETCD_PORT=${KUBESD_LIVE_ETCD_PORT:-23790}
ETCD_PEER_PORT=$((ETCD_PORT + 1))
ETCD_URL="http://127.0.0.1:${ETCD_PORT}"
SERVER="https://127.0.0.1:${PORT}"

log() { echo "live-apiserver: $*" >&2; }
die() {
    log "$*"
    exit 1
}

# --- binaries ---------------------------------------------------------------------------

# The directory holding kube-apiserver and kube-controller-manager: $KUBESD_LIVE_BIN, or
# $DIR/bin. Nothing here builds or downloads them.
BIN=${KUBESD_LIVE_BIN:-$DIR/bin}

# The etcd to run: $BIN/etcd if there is one, else the one on PATH.
etcd_bin() {
    if [[ -x $BIN/etcd ]]; then
        echo "$BIN/etcd"
    else
        command -v etcd
    fi
}

# etcd and etcdctl from Debian's packages (etcd-server, etcd-client), if none is found;
# a warning when that etcd is too old for streaming lists.
ensure_etcd() {
    if ! etcd_bin >/dev/null || ! command -v etcdctl >/dev/null; then
        log "installing etcd from Debian (etcd-server, etcd-client)"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server etcd-client >/dev/null
    fi
    local version
    version=$("$(etcd_bin)" --version | sed -n 's/^etcd Version: //p')
    if ! etcd_serves_streaming_lists "$version"; then
        log "etcd $version: the API server will not serve streaming lists (needs 3.5.13+ or 3.4.31+)"
    fi
}

# True for an etcd version whose watch progress requests the API server trusts.
etcd_serves_streaming_lists() {
    local major minor patch
    IFS=. read -r major minor patch <<<"${1%%[-+]*}"
    ((major > 3 || (major == 3 && minor > 5) ||
        (major == 3 && minor == 5 && patch >= 13) || (major == 3 && minor == 4 && patch >= 31)))
}

require_binaries() {
    local name
    for name in kube-apiserver kube-controller-manager; do
        [[ -x $BIN/$name ]] || die "no $BIN/$name: set KUBESD_LIVE_BIN to the directory holding kube-apiserver and kube-controller-manager"
    done
}

# --- certificates, tokens, configs -----------------------------------------------------

# A CA, the API server's serving certificate for 127.0.0.1, the service-account key
# pair, static tokens and an audit policy; made once per $DIR.
prepare() {
    mkdir -p "$DIR/pki" "$DIR/etcd" "$DIR/logs"
    local pki=$DIR/pki
    if [[ ! -f $pki/ca.crt ]]; then
        openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=kubesd-live-ca" \
            -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
        openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
            -keyout "$pki/apiserver.key" -out "$pki/apiserver.csr" 2>/dev/null
        printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default.svc\n' \
            >"$pki/apiserver.ext"
        openssl x509 -req -in "$pki/apiserver.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
            -CAcreateserial -days 30 -extfile "$pki/apiserver.ext" -out "$pki/apiserver.crt" 2>/dev/null
        openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
        openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
    fi
    if [[ ! -f $DIR/no-rights.token ]]; then
        local admin cm nobody
        admin=$(openssl rand -hex 16)
        cm=$(openssl rand -hex 16)
        nobody=$(openssl rand -hex 16)
        # token,user,uid,"groups"; kubesd-live-nobody is bound to no role: every LIST and
        # WATCH of its is refused (403).
        {
            echo "$admin,kubesd-live-admin,1,\"system:masters\""
            echo "$cm,system:kube-controller-manager,2,\"system:masters\""
            echo "$nobody,kubesd-live-nobody,3"
        } >"$DIR/tokens.csv"
        echo "$admin" >"$DIR/admin.token"
        echo "$nobody" >"$DIR/no-rights.token"
        write_kubeconfig "$DIR/admin.kubeconfig" "$admin"
        write_kubeconfig "$DIR/controller-manager.kubeconfig" "$cm"
        chmod 600 "$DIR/tokens.csv" "$DIR"/*.token "$DIR"/*.kubeconfig
    fi
    cat >"$DIR/audit-policy.yaml" <<'EOF'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  # Leases and events are the controllers' own chatter.
  - level: None
    resources:
      - {group: coordination.k8s.io, resources: [leases]}
      - {group: "", resources: [events]}
      - {group: events.k8s.io, resources: [events]}
  - level: Metadata
EOF
}

write_kubeconfig() {
    local file=$1 token=$2
    cat >"$file" <<EOF
apiVersion: v1
kind: Config
current-context: live
clusters:
  - name: live
    cluster: {server: "$SERVER", certificate-authority: "$DIR/pki/ca.crt"}
users:
  - name: live
    user: {token: "$token"}
contexts:
  - name: live
    context: {cluster: live, user: live}
EOF
}

# --- processes -------------------------------------------------------------------------

running() { [[ -f $DIR/$1.pid ]] && kill -0 "$(cat "$DIR/$1.pid")" 2>/dev/null; }

# Starts a daemon in its own session, remembering its pid.
spawn() {
    local name=$1
    shift
    setsid "$@" >>"$DIR/logs/$name.log" 2>&1 </dev/null &
    echo $! >"$DIR/$name.pid"
}

halt() {
    local name=$1 pid
    running "$name" || {
        rm -f "$DIR/$name.pid"
        return 0
    }
    pid=$(cat "$DIR/$name.pid")
    kill "$pid"
    for _ in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    rm -f "$DIR/$name.pid"
}

# Waits for `curl ARGS` to succeed, up to $1 seconds.
wait_for() {
    local seconds=$1 what=$2
    shift 2
    for _ in $(seq $((seconds * 5))); do
        if curl -fsS -o /dev/null "$@" 2>/dev/null; then
            return 0
        fi
        sleep 0.2
    done
    die "$what not ready after ${seconds}s (logs in $DIR/logs)"
}

start_etcd() {
    running etcd && return
    spawn etcd "$(etcd_bin)" --name kubesd-live --data-dir "$DIR/etcd" \
        --listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
        --listen-peer-urls "http://127.0.0.1:${ETCD_PEER_PORT}" \
        --initial-advertise-peer-urls "http://127.0.0.1:${ETCD_PEER_PORT}" \
        --initial-cluster "kubesd-live=http://127.0.0.1:${ETCD_PEER_PORT}"
    wait_for 30 etcd "$ETCD_URL/health"
}

# The API server; $1 is "true" or "false" for its watch cache.
start_apiserver() {
    local watch_cache=${1:-true}
    running kube-apiserver && return
    # ServiceAccount admission is off: no token controller runs, and pods need no token.
    spawn kube-apiserver "$BIN/kube-apiserver" \
        --etcd-servers "$ETCD_URL" \
        --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$PORT" \
        --tls-cert-file "$DIR/pki/apiserver.crt" --tls-private-key-file "$DIR/pki/apiserver.key" \
        --client-ca-file "$DIR/pki/ca.crt" \
        --token-auth-file "$DIR/tokens.csv" \
        --authorization-mode RBAC \
        --service-account-issuer https://kubernetes.default.svc \
        --service-account-key-file "$DIR/pki/sa.pub" \
        --service-account-signing-key-file "$DIR/pki/sa.key" \
        --service-cluster-ip-range 10.96.0.0/16 \
        --disable-admission-plugins ServiceAccount \
        --audit-policy-file "$DIR/audit-policy.yaml" \
        --audit-log-path "$DIR/audit.log" --audit-log-maxsize 1000 \
        --watch-cache="$watch_cache"
    wait_for 120 kube-apiserver -k -H "Authorization: Bearer $(cat "$DIR/admin.token")" \
        "$SERVER/readyz"
}

start_controllers() {
    running kube-controller-manager && return
    spawn kube-controller-manager "$BIN/kube-controller-manager" \
        --kubeconfig "$DIR/controller-manager.kubeconfig" \
        --authentication-kubeconfig "$DIR/controller-manager.kubeconfig" \
        --authorization-kubeconfig "$DIR/controller-manager.kubeconfig" \
        --controllers endpoints-controller,endpointslice-controller,endpointslice-mirroring-controller,garbage-collector-controller \
        --leader-elect=false --use-service-account-credentials=false \
        --bind-address 127.0.0.1 --secure-port 0
    sleep 1
    running kube-controller-manager ||
        die "kube-controller-manager exited: $(tail -5 "$DIR/logs/kube-controller-manager.log")"
}

print_env() {
    cat <<EOF
export KUBESD_LIVE_APISERVER=$SERVER
export KUBESD_LIVE_TOKEN=$(cat "$DIR/admin.token")
export KUBESD_LIVE_NO_RIGHTS_TOKEN=$(cat "$DIR/no-rights.token")
export KUBESD_LIVE_CA_FILE=$DIR/pki/ca.crt
export KUBESD_LIVE_AUDIT_LOG=$DIR/audit.log
export KUBESD_LIVE_RESTART="KUBESD_LIVE_DIR=$DIR KUBESD_LIVE_BIN=$BIN KUBESD_LIVE_PORT=$PORT KUBESD_LIVE_ETCD_PORT=$ETCD_PORT $(cd "$(dirname "$0")" && pwd)/live-apiserver.sh restart-compacted"
EOF
}

start() {
    require_binaries
    ensure_etcd
    prepare
    start_etcd
    start_apiserver true
    start_controllers
    log "running: API server $SERVER, audit log $DIR/audit.log"
    print_env
}

# The highest revision etcd has written.
etcd_revision() {
    etcdctl --endpoints "$ETCD_URL" endpoint status -w json |
        grep -o '"revision":[0-9]*' | head -1 | cut -d: -f2
}

# Clients resume their watches from the last resourceVersion they saw. Writing two keys
# of kubesd-live's own puts etcd's revision past every one of them; compacting there and
# serving watches from etcd directly (no watch cache) answers each resumed watch with
# 410 Gone, as after a long outage.
restart_compacted() {
    halt kube-apiserver
    etcdctl --endpoints "$ETCD_URL" put /kubesd-live/bump "$(date +%s%N)" >/dev/null
    etcdctl --endpoints "$ETCD_URL" put /kubesd-live/bump "$(date +%s%N)" >/dev/null
    local revision
    revision=$(etcd_revision)
    [[ -n $revision ]] || die "cannot read etcd's revision"
    etcdctl --endpoints "$ETCD_URL" compact "$revision" >/dev/null
    log "etcd compacted at revision $revision; API server restarting without its watch cache"
    start_apiserver false
}

# --- a load for the benchmarks ---------------------------------------------------------

LOAD_NS=kubesd-load

# One curl config entry (curl -K) for a request with a compact JSON body (no spaces:
# curl reads an unquoted value up to the first blank). `next` resets every option, so
# each entry carries all of its own; the token is read from $DIR/load/auth.header.
curl_entry() {
    local method=$1 path=$2 content_type=$3 body=$4
    printf 'next\nurl = "%s%s"\nrequest = %s\ncacert = "%s"\nsilent\nshow-error\n' \
        "$SERVER" "$path" "$method" "$DIR/pki/ca.crt"
    printf 'header = "@%s"\nheader = "Content-Type: %s"\nheader = "User-Agent: kubesd-live-populate"\n' \
        "$DIR/load/auth.header" "$content_type"
    printf 'data = %s\nwrite-out = "%%{http_code}\\n"\noutput = /dev/null\n' "$body"
}

# Sends every request of a curl config file, 16 at a time over one connection, and
# prints how many got each status code.
send_all() {
    local file=$1 what=$2
    log "$what"
    # The first entry's `next` would end an empty transfer: dropped.
    sed 1d "$file" | curl --no-progress-meter --parallel --parallel-max 16 -K - |
        sort | uniq -c | sed 's/^ */  status /' >&2
}

node_ip_of() { echo "10.240.$(($1 / 250)).$(($1 % 250 + 1))"; }
pod_ip_of() { echo "10.$((100 + $1 / 62500)).$(($1 / 250 % 250)).$(($1 % 250 + 1))"; }

# PODS pods in $LOAD_NS, spread over SERVICES services (the endpoints controllers make
# their Endpoints and EndpointSlices) and NODES nodes. Objects that exist are left as
# they are (409). The curl configs stay in $DIR/load.
populate() {
    local pods=${1:?usage: live-apiserver.sh populate PODS [SERVICES] [NODES]}
    local services=${2:-100} nodes=${3:-100} i t=2025-01-01T00:00:00Z
    mkdir -p "$DIR/load"
    (umask 077 && echo "Authorization: Bearer $(cat "$DIR/admin.token")" >"$DIR/load/auth.header")
    {
        curl_entry POST /api/v1/namespaces application/json \
            "{\"metadata\":{\"name\":\"$LOAD_NS\"}}"
        for ((i = 0; i < nodes; i++)); do
            curl_entry POST /api/v1/nodes application/json \
                "{\"metadata\":{\"name\":\"$LOAD_NS-node-$i\",\"labels\":{\"kubesd-load\":\"true\",\"topology.kubernetes.io/zone\":\"zone-$((i % 3))\"}},\"spec\":{\"podCIDR\":\"10.241.$i.0/24\"}}"
        done
        for ((i = 0; i < services; i++)); do
            curl_entry POST "/api/v1/namespaces/$LOAD_NS/services" application/json \
                "{\"metadata\":{\"name\":\"svc-$i\",\"labels\":{\"app\":\"svc-$i\"}},\"spec\":{\"selector\":{\"app\":\"svc-$i\"},\"ports\":[{\"name\":\"http\",\"port\":80,\"targetPort\":8080},{\"name\":\"metrics\",\"port\":9090}]}}"
        done
    } >"$DIR/load/objects.curl"
    send_all "$DIR/load/objects.curl" "creating the namespace $LOAD_NS, $nodes nodes, $services services"
    {
        for ((i = 0; i < nodes; i++)); do
            curl_entry PATCH "/api/v1/nodes/$LOAD_NS-node-$i/status" application/merge-patch+json \
                "{\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"$(node_ip_of "$i")\"},{\"type\":\"Hostname\",\"address\":\"$LOAD_NS-node-$i\"}],\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":10250}},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"KubeletReady\",\"lastHeartbeatTime\":\"$t\",\"lastTransitionTime\":\"$t\"}]}}"
        done
    } >"$DIR/load/nodes-status.curl"
    send_all "$DIR/load/nodes-status.curl" "the nodes' status"
    {
        for ((i = 0; i < pods; i++)); do
            curl_entry POST "/api/v1/namespaces/$LOAD_NS/pods" application/json \
                "{\"metadata\":{\"name\":\"pod-$i\",\"labels\":{\"app\":\"svc-$((i % services))\",\"pod-template-hash\":\"5d9c7b\"},\"annotations\":{\"prometheus.io/scrape\":\"true\",\"prometheus.io/port\":\"9090\"}},\"spec\":{\"nodeName\":\"$LOAD_NS-node-$((i % nodes))\",\"containers\":[{\"name\":\"app\",\"image\":\"registry.example/app:1.0\",\"ports\":[{\"name\":\"http\",\"containerPort\":8080},{\"name\":\"metrics\",\"containerPort\":9090}]}]}}"
        done
    } >"$DIR/load/pods.curl"
    send_all "$DIR/load/pods.curl" "creating $pods pods"
    {
        for ((i = 0; i < pods; i++)); do
            local ip node_ip
            ip=$(pod_ip_of "$i")
            node_ip=$(node_ip_of $((i % nodes)))
            curl_entry PATCH "/api/v1/namespaces/$LOAD_NS/pods/pod-$i/status" application/merge-patch+json \
                "{\"status\":{\"phase\":\"Running\",\"hostIP\":\"$node_ip\",\"podIP\":\"$ip\",\"podIPs\":[{\"ip\":\"$ip\"}],\"startTime\":\"$t\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"lastTransitionTime\":\"$t\"},{\"type\":\"ContainersReady\",\"status\":\"True\",\"lastTransitionTime\":\"$t\"},{\"type\":\"PodScheduled\",\"status\":\"True\",\"lastTransitionTime\":\"$t\"}],\"containerStatuses\":[{\"name\":\"app\",\"image\":\"registry.example/app:1.0\",\"imageID\":\"registry.example/app@sha256:0123\",\"containerID\":\"containerd://pod-$i-app\",\"ready\":true,\"started\":true,\"restartCount\":0,\"state\":{\"running\":{\"startedAt\":\"$t\"}}}]}}"
        done
    } >"$DIR/load/pods-status.curl"
    send_all "$DIR/load/pods-status.curl" "the pods' status (Running, Ready)"
}

# The API server's process id, for reading its CPU time and memory in /proc.
apiserver_pid() {
    running kube-apiserver || die "the API server is not running"
    cat "$DIR/kube-apiserver.pid"
}

stop() {
    halt kube-controller-manager
    halt kube-apiserver
    halt etcd
    log "stopped (state kept in $DIR; remove it to start afresh)"
}

case ${1:-} in
start) start ;;
restart-compacted) restart_compacted ;;
restart)
    halt kube-apiserver
    start_apiserver true
    ;;
populate) populate "${@:2}" ;;
apiserver-pid) apiserver_pid ;;
env) print_env ;;
stop) stop ;;
*)
    sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
