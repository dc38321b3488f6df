#!/usr/bin/env bash
# The data plane as a target of the shared peers harness (shared/bench/peers.sh --target NAME PORT CMD):
# writes a GatewayRoute sending every path ("/" prefix) to $BENCH_UPSTREAM_URL and runs
# `sluice run` on 127.0.0.1:$BENCH_PORT in the foreground (exec: the harness measures this process).
#   bench/peers-target.sh                  routing + proxying only
#   bench/peers-target.sh --transformer    plus a request-transformer GatewayPlugin (adds X-Gateway-Version: v1)
#   bench/peers-target.sh --chain DIR      jwt (RS256, public key DIR/jwt-public.pem) + rate-limiting (redis)
#                                          + request-transformer; needs Redis on 127.0.0.1:6379 (bench/chain.sh)
# Env: BENCH_PORT, BENCH_UPSTREAM_URL (set by the harness); BENCH_ADMIN_PORT (default BENCH_PORT + 100);
# BENCH_NODE_FLAGS: node/V8 flags for the data plane (compare heap sizings as separate targets).
set -euo pipefail
: "${BENCH_PORT:?set by peers.sh: the port to listen on}"
: "${BENCH_UPSTREAM_URL:?set by peers.sh: the upstream to proxy to}"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PATH="$(scripts/node-env.sh):$PATH"

dir="${TMPDIR:-/tmp}/sluice-peers-$BENCH_PORT"
mkdir -p "$dir"
plugins=""
extra=()
: >"$dir/gateway.yaml"
if [[ ${1:-} == --transformer || ${1:-} == --chain ]]; then
  cat >>"$dir/gateway.yaml" <<YAML
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: gateway-version, namespace: default }
spec:
  plugin: request-transformer
  config: { add: { headers: ["X-Gateway-Version:v1"] } }
---
YAML
  plugins="  plugins: [{ name: gateway-version }]"
fi
if [[ ${1:-} == --chain ]]; then
  pem_b64=$(base64 -w0 <"${2:?--chain needs the folder of jwt-public.pem}/jwt-public.pem")
  cat >>"$dir/gateway.yaml" <<YAML
apiVersion: v1
kind: Secret
metadata: { name: jwt-keys, namespace: default }
data: { bench: "$pem_b64" }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: auth, namespace: default }
spec:
  plugin: jwt
  config:
    issuers:
      - { issuer: "https://bench.idp/", audiences: [bench], algorithms: [RS256], keys: [{ secretKeyRef: { name: jwt-keys, key: bench } }] }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: limit, namespace: default }
spec: { plugin: rate-limiting, config: { second: 1000000000, policy: redis } }
---
YAML
  # The harness's readiness probe sends no Authorization: it gets a plugin-free route; the
  # load (with the token) matches the chain route by its exact Authorization header.
  token=$(cat "$2/token")
  plugins=""
  routes="    - { name: chain, paths: [\"/\"], headers: [{ name: Authorization, value: \"Bearer $token\" }], plugins: [{ name: auth }, { name: limit }, { name: gateway-version }] }
    - { name: probe, paths: [\"/\"] }"
  extra=(--redis redis://127.0.0.1:6379 --redis-prefix "sluice-bench-chain-$BENCH_PORT:")
fi
cat >>"$dir/gateway.yaml" <<YAML
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: peers, namespace: default }
spec:
  service: { name: peers-upstream, url: "$BENCH_UPSTREAM_URL" }
$plugins
  routes:
${routes:-    - { name: all, paths: [\"/\"] \}}
YAML

export NODE_ENV=production
# The flags of bin/sluice.ts's #! line (how the installed binary and the image start; its
# ${SLUICE_NODE_FLAG}, which env -S expands, is the data plane's none), then BENCH_NODE_FLAGS
# (later flags win).
shebang_flags=$(sed -n '1{s/^#!.*[/ ]node//;s/\${[A-Z_]*}//g;p}' bin/sluice.ts)
# shellcheck disable=SC2086 # lists of node flags (e.g. --max-semi-space-size=16)
exec node $shebang_flags ${BENCH_NODE_FLAGS:-} bin/sluice.ts run -f "$dir/gateway.yaml" \
  --host 127.0.0.1 --port "$BENCH_PORT" \
  --admin-host 127.0.0.1 --admin-port "${BENCH_ADMIN_PORT:-$((BENCH_PORT + 100))}" \
  --no-access-log --log-level warn --drain-timeout-ms 2000 --state-dir "$dir/state" "${extra[@]}"
