#!/usr/bin/env bash
# What kubesd's initial sync costs a real API server, per way of asking: started by
# scripts/live-apiserver.sh and loaded by its `populate`. Four jobs (pods, endpoints,
# services, nodes; every namespace) through the script's admin kubeconfig, synced by
#
#   json-list    --encoding json --kubernetes.list-mode list
#   proto-list   --encoding auto --kubernetes.list-mode list
#   proto-stream --encoding auto --kubernetes.list-mode stream
#   default      no flags: what a user gets (list mode auto, chosen by the server's
#                version)
#
# each ROUNDS times (default 3), the modes alternating, with `kubesd once` and with
# `kubesd run` until /ready. Per run it prints the API server's CPU seconds (utime +
# stime from /proc/PID/stat, less its idle rate over the same time) and peak RSS (its
# VmHWM, reset before each run through /proc/PID/clear_refs), and kubesd's wall time,
# CPU seconds and peak RSS; then the medians per mode and whether every mode served
# the same targets.
#
#   scripts/live-sync-cost.sh sync [ROUNDS]
#   scripts/live-sync-cost.sh blocks [RUNS] [ROUNDS]
#       the API server's CPU per sync with its garbage collection spread over the runs:
#       RUNS (default 8) `kubesd once` back to back per way, the ways alternating, ROUNDS
#       (default 3) times; the cost of a way is the block's CPU (and 3 s after it), less
#       the idle rate, over RUNS. Besides the four ways above, the two protobuf ways over
#       HTTP/1.1 (`enable_http2: false`; the jobs then name the API server, token and CA
#       instead of the kubeconfig): proto-list-h1, proto-stream-h1.
#   scripts/live-sync-cost.sh profile WAY [RUNS]
#       the API server's own CPU profile (/debug/pprof/profile) over RUNS (default 4)
#       `kubesd once` of one way, written to $KUBESD_LIVE_DIR/WAY.pprof for `go tool pprof`
#   scripts/live-sync-cost.sh restart
#       `kubesd run` with two pod jobs, one with attach_metadata.node; restarts the API
#       server (watch cache on) and counts the pod LISTs and streaming lists kubesd
#       sends in the 20 s after it (the audit log), for each list mode; kubesd's logs
#       go to $KUBESD_LIVE_DIR/logs/kubesd-restart-MODE.log.
#
# Needs root (for clear_refs), GNU time, and kubesd built: cargo build --release
# (KUBESD_BIN to use another). $KUBESD_LIVE_DIR and $KUBESD_LIVE_BIN as for
# live-apiserver.sh (`restart` restarts the API server through it).

set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
DIR=${KUBESD_LIVE_DIR:-/tmp/kubesd-live}
KUBESD=${KUBESD_BIN:-$HERE/../target/release/kubesd}
KUBECONFIG_FILE=$DIR/admin.kubeconfig
TICKS=$(getconf CLK_TCK)
WORK=$(mktemp -d)
# The kubesd run that is up, stopped if the script stops early.
RUNNING=
trap '[[ -z $RUNNING ]] || kill "$RUNNING" 2>/dev/null; rm -rf "$WORK"' EXIT

log() { echo "live-sync-cost: $*" >&2; }

mode_flags() {
    case $1 in
    json-list) echo "--encoding json --kubernetes.list-mode list" ;;
    proto-list | proto-list-h1) echo "--encoding auto --kubernetes.list-mode list" ;;
    proto-stream | proto-stream-h1) echo "--encoding auto --kubernetes.list-mode stream" ;;
    default) echo "" ;;
    esac
}

# The config file of a way: the *-h1 ways name the API server, the admin token and the
# CA (a kubeconfig excludes client settings such as enable_http2).
config_of() {
    case $1 in
    *-h1) echo "$WORK/sync-h1.yml" ;;
    *) echo "$WORK/sync.yml" ;;
    esac
}

write_config() {
    local file=$1
    {
        echo "scrape_configs:"
        for role in pod endpoints service node; do
            printf '  - job_name: %s\n    kubernetes_sd_configs:\n      - {role: %s, kubeconfig_file: "%s"}\n' \
                "$role" "$role" "$KUBECONFIG_FILE"
        done
    } >"$file"
}

# The same jobs over HTTP/1.1: the API server, token and CA named in each job.
write_h1_config() {
    local file=$1 server
    server=$(awk '/server:/ {gsub(/[",}]/, "", $3); print $3; exit}' "$KUBECONFIG_FILE")
    {
        echo "scrape_configs:"
        for role in pod endpoints service node; do
            printf '  - job_name: %s\n    kubernetes_sd_configs:\n      - role: %s\n        api_server: "%s"\n        bearer_token_file: "%s"\n        tls_config: {ca_file: "%s"}\n        enable_http2: false\n' \
                "$role" "$role" "$server" "$DIR/admin.token" "$DIR/pki/ca.crt"
        done
    } >"$file"
}

apiserver_pid() { "$HERE/live-apiserver.sh" apiserver-pid; }

# A process's CPU seconds so far (user + system), in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# A process's peak resident set, in KiB.
peak_rss_kib() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status"; }

now() { date +%s.%N; }

# The API server's CPU ticks per second at rest, over 10 s.
idle_rate() {
    local pid=$1 before after
    before=$(cpu_ticks "$pid")
    sleep 10
    after=$(cpu_ticks "$pid")
    echo "($after - $before) / 10" | bc -l
}

# Settles 2 s after a run (the API server's garbage collection of what it sent), then
# prints the API server's CPU seconds since `t0`/`c0`, less the idle rate.
apiserver_cost() {
    local pid=$1 c0=$2 t0=$3 idle=$4
    sleep 2
    local c1 t1
    c1=$(cpu_ticks "$pid")
    t1=$(now)
    echo "($c1 - $c0 - $idle * ($t1 - $t0)) / $TICKS" | bc -l
}

# kubesd once: prints "wall cpu rss_kib" of kubesd; its targets go to $2.
run_once() {
    local mode=$1 out=$2
    # shellcheck disable=SC2046 # the flags are words
    /usr/bin/time -f "%e %U %S %M" -o "$WORK/time" \
        "$KUBESD" once --config "$(config_of "$mode")" $(mode_flags "$mode") --timeout 300s \
        >"$out" 2>"$WORK/once.log" || {
        log "kubesd once failed: $(tail -3 "$WORK/once.log")"
        exit 1
    }
    awk '{printf "%s %.2f %s\n", $1, $2 + $3, $4}' "$WORK/time"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# kubesd run until /ready: prints "wall cpu rss_kib" of kubesd at that moment; its
# targets (/sd of each job) go to $3.
run_until_ready() {
    local mode=$1 config=$2 out=$3 port pid start
    port=$(free_port)
    start=$(now)
    # shellcheck disable=SC2046
    "$KUBESD" run --config "$config" $(mode_flags "$mode") --listen "127.0.0.1:$port" \
        >/dev/null 2>"$WORK/run.log" &
    pid=$!
    RUNNING=$pid
    until curl -fs -o /dev/null "http://127.0.0.1:$port/ready"; do
        kill -0 "$pid" 2>/dev/null || {
            log "kubesd run exited: $(tail -3 "$WORK/run.log")"
            exit 1
        }
        sleep 0.05
    done
    local wall cpu rss
    wall=$(echo "$(now) - $start" | bc -l)
    cpu=$(echo "$(cpu_ticks "$pid") / $TICKS" | bc -l)
    rss=$(peak_rss_kib "$pid")
    for job in pod endpoints service node; do
        curl -fs "http://127.0.0.1:$port/sd/$job" | python3 -c \
            'import json,sys; print(sorted(json.dumps(g, sort_keys=True) for g in json.load(sys.stdin)))'
    done >"$out"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    RUNNING=
    printf '%.2f %.2f %s\n' "$wall" "$cpu" "$rss"
}

# Targets of `kubesd once`'s output, in an order-independent form.
normalise_once() {
    python3 -c '
import json, sys
out = json.load(open(sys.argv[1]))
for job in ["pod", "endpoints", "service", "node"]:
    print(sorted(json.dumps(g, sort_keys=True) for g in out[job]))' "$1"
}

sync() {
    local rounds=${1:-3} pid idle
    write_config "$WORK/sync.yml"
    pid=$(apiserver_pid)
    idle=$(idle_rate "$pid")
    log "API server pid $pid, idle $(echo "$idle / $TICKS" | bc -l | cut -c1-6) CPU-s/s"
    printf '%-5s %-12s %-6s %9s %11s %8s %8s %10s\n' how mode round "api CPU-s" "api peak MiB" \
        "wall s" "CPU s" "RSS MiB" | tee "$WORK/table"
    local round how mode c0 t0 cost peak k
    for round in $(seq "$rounds"); do
        for how in once run; do
            for mode in json-list proto-list proto-stream default; do
                echo 5 >"/proc/$pid/clear_refs"
                c0=$(cpu_ticks "$pid")
                t0=$(now)
                if [[ $how == once ]]; then
                    k=$(run_once "$mode" "$WORK/out.json")
                    normalise_once "$WORK/out.json" >"$WORK/targets-$how-$mode"
                else
                    k=$(run_until_ready "$mode" "$WORK/sync.yml" "$WORK/targets-$how-$mode")
                fi
                cost=$(apiserver_cost "$pid" "$c0" "$t0" "$idle")
                peak=$(peak_rss_kib "$pid")
                read -r wall cpu rss <<<"$k"
                printf '%-5s %-12s %-6s %9.2f %11d %8.2f %8.2f %10d\n' "$how" "$mode" "$round" \
                    "$cost" $((peak / 1024)) "$wall" "$cpu" $((rss / 1024)) | tee -a "$WORK/table"
            done
        done
    done
    echo "medians:"
    for how in once run; do
        for mode in json-list proto-list proto-stream default; do
            awk -v h="$how" -v m="$mode" '$1 == h && $2 == m {
                    for (i = 4; i <= 8; i++) v[i] = v[i] " " $i; n++ }
                function median(s,   a, k, j, t) { k = split(s, a, " ");
                    for (i2 = 1; i2 <= k; i2++) for (j = i2 + 1; j <= k; j++)
                        if (a[j] + 0 < a[i2] + 0) { t = a[i2]; a[i2] = a[j]; a[j] = t }
                    return a[int((k + 1) / 2)] }
                END { if (n) printf "%-5s %-12s %-6s %9s %11s %8s %8s %10s\n", h, m, n "x",
                    median(v[4]), median(v[5]), median(v[6]), median(v[7]), median(v[8]) }' \
                "$WORK/table"
        done
    done
    for how in once run; do
        if cmp -s "$WORK/targets-$how-json-list" "$WORK/targets-$how-proto-list" &&
            cmp -s "$WORK/targets-$how-json-list" "$WORK/targets-$how-proto-stream" &&
            cmp -s "$WORK/targets-$how-json-list" "$WORK/targets-$how-default"; then
            echo "$how: the same targets in every mode"
        else
            echo "$how: the modes' targets DIFFER (in $WORK, kept)"
            trap - EXIT
        fi
    done
}

# kubesd's pod LISTs and pod streaming lists in the audit log after line $1: "LISTS
# STREAMS", one per audit ID.
count_pod_lists() {
    python3 -c '
import json, sys
skip, lists, streams = int(sys.argv[2]), set(), set()
with open(sys.argv[1]) as f:
    for n, line in enumerate(f):
        if n < skip:
            continue
        e = json.loads(line)
        uri = e.get("requestURI", "")
        if not e.get("userAgent", "").startswith("kubesd/") or not uri.startswith("/api/v1/pods"):
            continue
        if e.get("verb") == "list":
            lists.add(e["auditID"])
        elif "sendInitialEvents=true" in uri:
            streams.add(e["auditID"])
print(len(lists), len(streams))' "$DIR/audit.log" "$1"
}

restart() {
    local config=$WORK/restart.yml mode port pid lines
    {
        echo "scrape_configs:"
        printf '  - job_name: pods\n    kubernetes_sd_configs:\n      - {role: pod, kubeconfig_file: "%s"}\n' "$KUBECONFIG_FILE"
        printf '  - job_name: pods-with-node\n    kubernetes_sd_configs:\n      - {role: pod, kubeconfig_file: "%s", attach_metadata: {node: true}}\n' "$KUBECONFIG_FILE"
    } >"$config"
    for mode in proto-list proto-stream default; do
        port=$(free_port)
        lines=$(wc -l <"$DIR/audit.log")
        # shellcheck disable=SC2046
        "$KUBESD" run --config "$config" $(mode_flags "$mode") --listen "127.0.0.1:$port" \
            >/dev/null 2>"$DIR/logs/kubesd-restart-$mode.log" &
        pid=$!
        RUNNING=$pid
        until curl -fs -o /dev/null "http://127.0.0.1:$port/ready"; do sleep 0.1; done
        read -r l s <<<"$(count_pod_lists "$lines")"
        echo "$mode: at start, kubesd sent $l pod LISTs and $s pod streaming lists"
        lines=$(wc -l <"$DIR/audit.log")
        "$HERE/live-apiserver.sh" restart
        sleep 20
        read -r l s <<<"$(count_pod_lists "$lines")"
        echo "$mode: after the API server restarted: $l pod LISTs and $s pod streaming lists in 20 s"
        kill "$pid"
        wait "$pid" 2>/dev/null || true
        RUNNING=
    done
}

WAYS="json-list proto-list proto-stream default proto-list-h1 proto-stream-h1"

blocks() {
    local runs=${1:-8} rounds=${2:-3} pid idle round way c0 t0 i cost
    write_config "$WORK/sync.yml"
    write_h1_config "$WORK/sync-h1.yml"
    pid=$(apiserver_pid)
    idle=$(idle_rate "$pid")
    log "API server pid $pid, idle $(echo "$idle / $TICKS" | bc -l | cut -c1-6) CPU-s/s; $runs runs a block"
    printf '%-16s %-6s %14s\n' way round "api CPU-s/sync" | tee "$WORK/table"
    for round in $(seq "$rounds"); do
        for way in $WAYS; do
            c0=$(cpu_ticks "$pid")
            t0=$(now)
            for i in $(seq "$runs"); do
                run_once "$way" "$WORK/out.json" >/dev/null
            done
            normalise_once "$WORK/out.json" >"$WORK/targets-$way"
            sleep 1
            cost=$(apiserver_cost "$pid" "$c0" "$t0" "$idle")
            printf '%-16s %-6s %14.3f\n' "$way" "$round" "$(echo "$cost / $runs" | bc -l)" |
                tee -a "$WORK/table"
        done
    done
    echo "medians (range):"
    for way in $WAYS; do
        awk -v w="$way" '$1 == w { v[++n] = $3 }
            END { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
                      if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
                  printf "%-16s %.3f (%.3f-%.3f)\n", w, v[int((n + 1) / 2)], v[1], v[n] }' \
            "$WORK/table"
    done
    for way in $WAYS; do
        cmp -s "$WORK/targets-json-list" "$WORK/targets-$way" || {
            echo "the targets of $way DIFFER from json-list's (in $WORK, kept)"
            trap - EXIT
            return 1
        }
    done
    echo "the same targets in every way"
}

profile() {
    local way=$1 runs=${2:-4} pid profiler i
    write_config "$WORK/sync.yml"
    write_h1_config "$WORK/sync-h1.yml"
    # Long enough for the runs; the profile covers its whole span.
    curl -fsS --cacert "$DIR/pki/ca.crt" -H "Authorization: Bearer $(cat "$DIR/admin.token")" \
        -o "$DIR/$way.pprof" \
        "$(awk '/server:/ {gsub(/[",}]/, "", $3); print $3; exit}' "$KUBECONFIG_FILE")/debug/pprof/profile?seconds=$((3 * runs + 3))" &
    profiler=$!
    sleep 1
    for i in $(seq "$runs"); do
        run_once "$way" "$WORK/out.json" >/dev/null
    done
    wait "$profiler"
    log "profile of $runs syncs ($way) in $DIR/$way.pprof: go tool pprof -top $DIR/$way.pprof"
}

case ${1:-} in
sync) sync "${2:-3}" ;;
blocks) blocks "${2:-8}" "${3:-3}" ;;
profile) profile "${2:?which way}" "${3:-4}" ;;
restart) restart ;;
*)
    sed -n '2,37p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
