#!/bin/bash
# The simulator's churn against the pace asked: `kubesd simulate` with PODS pods on NODES
# nodes (100,000 on 2,000) churning CHURN pod changes a second (2,000), discovered by
# `kubesd run` (pods with their nodes, endpoints), while a pod watch counts the events
# it gets for SECONDS_COUNTED seconds (60), from SETTLE seconds (30) after the run has
# synced. Prints the pace asked, the pace the simulator made, the watch saw and kubesd's
# pod watch got over those seconds, the simulator's own metrics and its pod count
# before and after.
# Build first: cargo build --profile bench --bin kubesd
set -eu
BIN=${BIN:-$(dirname "$0")/../target/release/kubesd}
BIN=$(realpath "$BIN")
PODS=${PODS:-100000}
NODES=${NODES:-2000}
CHURN=${CHURN:-2000}
SECONDS_COUNTED=${SECONDS_COUNTED:-60}
SETTLE=${SETTLE:-30}
API=127.0.0.1:16444
SD=127.0.0.1:19098
WORK=$(mktemp -d)
cd "$WORK"
cat > jobs.yml <<YAML
scrape_configs:
  - job_name: pods
    kubernetes_sd_configs:
      - role: pod
        api_server: http://$API
        attach_metadata: {node: true}
  - job_name: endpoints
    kubernetes_sd_configs:
      - role: endpoints
        api_server: http://$API
YAML
"$BIN" simulate --listen "$API" --pods "$PODS" --nodes "$NODES" --churn "$CHURN" > sim.log 2>&1 &
SIM=$!
RUN=
trap 'kill $SIM $RUN 2>/dev/null; rm -rf "$WORK"' EXIT
# The cluster is generated once the simulator prints what it serves.
until grep -q '^kubesd simulator serving' sim.log; do sleep 1; done
"$BIN" run --config jobs.yml --listen "$SD" > run.log 2>&1 &
RUN=$!
# /sd answers 503 until the job's first sync.
until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$SD/sd/pods")" = 200 ]; do sleep 1; done
until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$SD/sd/endpoints")" = 200 ]; do sleep 1; done
# The churn falls behind while the run's LISTs are served, and the run then catches up
# on the events of its sync: count once both are past.
sleep "$SETTLE"
sim_metric() { curl -s "http://$API/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
run_pod_events() {
  curl -s "http://$SD/metrics" | awk '/^kubesd_events_(added|modified|deleted)_total\{.*role="pod"/ {n += $2} END {print n + 0}'
}
pods_before=$(sim_metric 'kubesd_simulator_objects{resource="pods"}')
rv=$(curl -s "http://$API/api/v1/pods?limit=1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["metadata"]["resourceVersion"])')
made_before=$(sim_metric kubesd_simulator_churn_pod_changes_total)
run_before=$(run_pod_events)
# A pod watch as kubectl opens one (JSON, no bookmarks): one line per event.
events=$(timeout "$SECONDS_COUNTED" curl -sN "http://$API/api/v1/pods?watch=1&resourceVersion=$rv" | wc -l || true)
made_after=$(sim_metric kubesd_simulator_churn_pod_changes_total)
run_after=$(run_pod_events)
pods_after=$(sim_metric 'kubesd_simulator_objects{resource="pods"}')
python3 - "$CHURN" "$SECONDS_COUNTED" "$events" "$made_before" "$made_after" "$run_before" "$run_after" <<'PY'
import sys
asked, seconds, events, made_before, made_after, run_before, run_after = map(float, sys.argv[1:])
def pace(what, n):
    print("%s: %.0f pod changes a second (%.1f %% of asked) over %d s" % (what, n / seconds, 100 * n / seconds / asked, seconds))
print("asked: %d pod changes a second" % asked)
pace("the simulator made", made_after - made_before)
pace("a pod watch saw", events)
pace("kubesd run's pod watch got", run_after - run_before)
PY
echo "pods: $pods_before before, $pods_after after (--pods $PODS)"
curl -s "http://$API/metrics" | grep '^kubesd_simulator_churn'
grep 'falls behind' sim.log | tail -2 || true
