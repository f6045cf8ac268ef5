#!/bin/bash
# Times `kubesd once` syncing one pod job from a simulator of 100k pods, in JSON and in
# protobuf (`--encoding json` and `auto`), alternately, twice each; prints wall time,
# peak RSS and CPU of kubesd alone, and whether both encodings gave the same targets.
# Build first: cargo build --profile bench --bin kubesd
set -eu
BIN=${BIN:-$(dirname "$0")/../target/release/kubesd}
BIN=$(realpath "$BIN")
WORK=$(mktemp -d)
cd "$WORK"
cat > pods.yml <<'YAML'
scrape_configs:
  - job_name: pods
    kubernetes_sd_configs:
      - role: pod
        api_server: http://127.0.0.1:16443
YAML
"$BIN" simulate --listen 127.0.0.1:16443 --pods 100000 --nodes 2000 --namespaces 50 > sim.log 2>&1 &
SIM=$!
trap 'kill $SIM; rm -rf "$WORK"' EXIT
until curl -s -o /dev/null 'http://127.0.0.1:16443/api/v1/namespaces'; do sleep 1; done
for round in 1 2; do
  for enc in json auto; do
    /usr/bin/time -f "$enc: wall %e s, peak RSS %M KB, CPU %U s user + %S s sys" \
      "$BIN" once --config pods.yml --encoding "$enc" --timeout 300s > "out-$enc.json" 2> "time-$enc.txt"
    tail -1 "time-$enc.txt"
  done
done
python3 -c "
import json
a = json.load(open('out-json.json')); b = json.load(open('out-auto.json'))
print('same targets in both encodings:', a == b, '(%d targets)' % sum(len(g['targets']) for g in a['pods']))
"
