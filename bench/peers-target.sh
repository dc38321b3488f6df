#!/usr/bin/env bash
# The data plane as a target of the shared peers harness (shared/bench/peers.sh --target NAME PORT CMD):
# writes a GatewayRoute sending every path ("/" prefix) to $BENCH_UPSTREAM_URL and runs
# `sluice run` on 127.0.0.1:$BENCH_PORT in the foreground (exec: the harness measures this process).
#   bench/peers-target.sh                  routing + proxying only
#   bench/peers-target.sh --transformer    plus a request-transformer GatewayPlugin (adds X-Gateway-Version: v1)
#   bench/peers-target.sh --chain DIR [MS] jwt (RS256, public key DIR/jwt-public.pem) + rate-limiting (redis)
#                                          + request-transformer; needs Redis on 127.0.0.1:6379 (bench/chain.sh);
#                                          MS: the rate limit's syncMs (synced every MS, no Redis trip per request)
#   bench/peers-target.sh --cache [memory|redis]
#                                          GET and HEAD through a proxy-cache GatewayPlugin, store memory (the
#                                          default: in this process, what "a hit costs ≤ 0.6× the plain GET"
#                                          compares with the plain proxy) or redis (127.0.0.1:6379); other
#                                          methods take a plugin-free route (bench/plugins.sh)
#   bench/peers-target.sh --idempotency    POST through an idempotency GatewayPlugin (`{}`), store Redis on
#                                          127.0.0.1:6379; sent one fixed Idempotency-Key (peers.sh -H), the
#                                          load is all replays (bench/plugins.sh)
# Env: BENCH_PORT, BENCH_UPSTREAM_URL (set by the harness); BENCH_ADMIN_PORT (default BENCH_PORT + 100);
# BENCH_NODE_FLAGS: node/V8 flags for the data plane (compare heap sizings as separate targets);
# BENCH_WRAP: a command the data plane runs under (bench/instructions.ts: valgrind's callgrind);
# BENCH_SLUICE_FLAGS: more `sluice run` flags (there: a Redis deadline for a process 50× slower).
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
  requestTransformer: { add: { headers: ["X-Gateway-Version:v1"] } }
---
YAML
  plugins="  plugins: [{ name: gateway-version }]"
fi
if [[ ${1:-} == --cache ]]; then
  store=${2:-memory}
  [[ $store == memory || $store == redis ]] || { echo "--cache takes memory or redis, not '$store'" >&2; exit 2; }
  [[ $store == redis ]] && extra=(--redis redis://127.0.0.1:6379 --redis-prefix "sluice-bench-cache-$BENCH_PORT:")
  # The harness's upstream (nginx `return 200`) sends no Cache-Control, and proxy-cache has no
  # default TTL (RFC 9111: nothing without freshness is stored). So the cached route's service is
  # this data plane itself, on /__origin: a route whose response-transformer adds
  # `Cache-Control: public, max-age=86400` to the upstream's answer. (A response-transformer on the
  # cached route would not do: its response hook runs after the cache has judged the headers.)
  # Only misses take that second hop: the probe's first GET stores the item, the load's GETs are
  # hits, answered in the cache's request hook, so the hit is measured alone. POST (and the rest)
  # goes straight to the upstream on a plugin-free route, as in the plain target.
  cat >>"$dir/gateway.yaml" <<YAML
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: cache, namespace: default }
spec:
  plugin: proxy-cache
  proxyCache: { store: $store }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: cacheable, namespace: default }
spec:
  plugin: response-transformer
  responseTransformer: { add: { headers: ["Cache-Control:public, max-age=86400"] } }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: peers-cached, namespace: default }
spec:
  service: { name: peers-origin, url: "http://127.0.0.1:$BENCH_PORT/__origin" }
  routes:
    - { name: cached, paths: ["/"], methods: [GET, HEAD], plugins: [{ name: cache }] }
---
YAML
  routes="    - { name: all, paths: [\"/\"] }
    - { name: origin, paths: [\"/__origin\"], stripPrefix: true, plugins: [{ name: cacheable }] }"
fi
if [[ ${1:-} == --idempotency ]]; then
  # The plugin's defaults: POST and PATCH, keys of 32–64 characters, records kept 24 h. The
  # fingerprint covers Authorization and User-Agent: the harness's check (curl) and its load (wrk)
  # must send the same User-Agent, or the load's replays are 422 (bench/plugins.sh sets one).
  cat >>"$dir/gateway.yaml" <<YAML
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: idempotency, namespace: default }
spec:
  plugin: idempotency
  idempotency: {}
---
YAML
  plugins="  plugins: [{ name: idempotency }]"
  extra=(--redis redis://127.0.0.1:6379 --redis-prefix "sluice-bench-idem-$BENCH_PORT:")
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
  jwt:
    issuers:
      - { issuer: "https://bench.idp/", audiences: [bench], algorithms: [RS256], keys: [{ secretKeyRef: { name: jwt-keys, key: bench } }] }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: limit, namespace: default }
spec: { plugin: rate-limiting, rateLimiting: { second: 1000000000, policy: redis${3:+, syncMs: $3} } }
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
# shellcheck disable=SC2086 # lists of node flags (e.g. --max-semi-space-size=16), a command line, sluice flags
exec ${BENCH_WRAP:-} node $shebang_flags ${BENCH_NODE_FLAGS:-} bin/sluice.ts run -f "$dir/gateway.yaml" \
  --host 127.0.0.1 --port "$BENCH_PORT" \
  --admin-host 127.0.0.1 --admin-port "${BENCH_ADMIN_PORT:-$((BENCH_PORT + 100))}" \
  --no-access-log --log-level warn --drain-timeout-ms 2000 --state-dir "$dir/state" "${extra[@]}" ${BENCH_SLUICE_FLAGS:-}
