#!/usr/bin/env bash
# `make test-k8s`: the tests against a real Kubernetes API server (vitest.k8s.config.ts), one file
# at a time on the cluster KUBECONFIG names.
#
# With KUBECONFIG_GATEWAY_API naming a second cluster, test/gateway-api runs on it in a second
# vitest beside the rest (.ci/run starts two kapis). Why two processes: vitest runs the files of
# every project that allows one worker in one queue, so one vitest cannot run two serial streams.
# Why it pays: each stream waits on its API server, processes and sockets more than on the CPU
# (one alone left a 2-core VM 48 % idle). The two share the host's loopback: test/gateway-api's
# data planes, back ends and Gateway port ranges are apart from the rest's, and each side draws
# free ports from its own block (FREE_PORT_BLOCK, test/helpers/free-port.ts). The second side's
# output is printed when both have ended, so neither interleaves with the other.
set -euo pipefail
cd "$(dirname "$0")/.."
config=vitest.k8s.config.ts
if [ -z "${KUBECONFIG_GATEWAY_API:-}" ]; then
  exec vitest run --config "$config" "$@"
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
KUBECONFIG="$KUBECONFIG_GATEWAY_API" FREE_PORT_BLOCK=2 vitest run --config "$config" test/gateway-api "$@" >"$log" 2>&1 &
second=$!
rc=0
vitest run --config "$config" test/k8s test/chart/k8s "$@" || rc=$?
rc2=0
wait "$second" || rc2=$?
echo
echo "── test/gateway-api, on KUBECONFIG_GATEWAY_API (ran beside the above) ──"
cat "$log"
[ "$rc" -eq 0 ] && [ "$rc2" -eq 0 ]
