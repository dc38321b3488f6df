#!/usr/bin/env bash
# A proxy-cache hit and an idempotent replay next to the plain proxy and the Node floor, with the
# shared peers harness (../shared/bench/peers.sh), in one run: bare-node-undici (the floor),
# sluice proxying plainly, sluice-cache (bench/peers-target.sh --cache: GETs answered from the
# cache after the probe's first miss) and sluice-idempotency (--idempotency: POSTs replayed, the
# harness sending one fixed Idempotency-Key with every request). Then bench/ratios.ts prints every
# target next to the floor and the issue's two plugin ratios: the hit's CPU µs/req over the plain
# GET's (≤ 0.6×), the replay's over the plain POST's (≤ 0.8×). A first execution (a fresh key per
# request) is `idem-first` in bench/idempotency.ts (make bench).
#
# Every target gets the same headers: the key, `Authorization: Bearer bench` (the plugin refuses a
# key without an identified caller, and scopes the key by it; with `public` responses the cache
# stores them all the same) and `User-Agent: sluice-bench` (in the key's fingerprint: the harness's
# check uses curl, its load wrk; without one User-Agent for both the replays would be 422).
# BENCH_CACHE_STORE=redis measures the cache on its Redis store instead of memory. Needs Redis on
# 127.0.0.1:6379; the bench's keys there are deleted at the end.
# Usage: bench/plugins.sh [extra peers.sh options, e.g. -r 3, -d 2 -w 1]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PATH="$(scripts/node-env.sh):$PATH"
out="bench/results"
cache_port=18122 idem_port=18124
store=${BENCH_CACHE_STORE:-memory}
# Fresh for each run: a record left by an earlier one would turn the check's first execution into a replay.
key="bench-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
restore_redis=$(bench/redis-core.sh)
clean_redis() {
  local pattern
  for pattern in "sluice-bench-cache-$cache_port:*" "sluice-bench-idem-$idem_port:*"; do
    redis-cli -h 127.0.0.1 -p 6379 --scan --pattern "$pattern" | xargs -r redis-cli -h 127.0.0.1 -p 6379 unlink >/dev/null
  done
}
trap 'clean_redis; eval "$restore_redis"' EXIT
../shared/bench/peers.sh --out "$out" -t bare-node-undici,sluice,sluice-cache,sluice-idempotency \
  -H "Idempotency-Key: $key" -H 'Authorization: Bearer bench' -H 'User-Agent: sluice-bench' \
  --target sluice 18110 'bench/peers-target.sh' \
  --target sluice-cache "$cache_port" "bench/peers-target.sh --cache $store" \
  --target sluice-idempotency "$idem_port" 'bench/peers-target.sh --idempotency' "$@"
node bench/ratios.ts "$(ls -t "$out"/peers-*.json | head -1)" --plain sluice --chain '' \
  --cache sluice-cache --replay sluice-idempotency
