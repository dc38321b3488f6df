#!/usr/bin/env bash
# The data plane next to the Node floor with the shared peers harness (../shared/bench/peers.sh),
# in one run: the bare Node floor (bare-node-undici), nginx, sluice proxying plainly, and sluice
# with the chain of a typical API route: jwt (RS256, static key from a Secret) + rate-limiting
# (policy redis, a limit never reached) + request-transformer, and that chain again with the rate
# limit synced every 50 ms (sluice-chain-sync: syncMs, no Redis trip per request). Every target
# gets the same Authorization header. Then bench/ratios.ts prints each target's CPU µs/req, p99
# and peak RSS as ratios to the floor of the same run.
#
# BENCH_BEFORE=DIR adds sluice-before and sluice-chain-before, run from another checkout (DIR, a
# `git worktree add DIR <commit>` with node_modules): a change and its base, measured in one run.
# Needs Redis on 127.0.0.1:6379. Usage: bench/chain.sh [extra peers.sh options, e.g. -r 3, -d 2 -w 1]
#
# bench/chain.sh --half-load [bench/run.ts options, e.g. --rounds 3]: the tail below saturation,
# which peers.sh does not measure. The floor (bench/floor.ts), plain sluice and the chain, each as
# above, and the chain with its rate limit synced every 50 ms (syncMs: no Redis trip per request),
# at a constant half of the floor's full-load rate (bench/run.ts --rate-of-floor 0.5, the floor
# measured first in the same run); the table gives each one's p99 next to the floor's.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PATH="$(scripts/node-env.sh):$PATH"
dir=$(mktemp -d "${TMPDIR:-/tmp}/sluice-chain-XXXXXX")
out="bench/results"
restore_redis=$(bench/redis-core.sh)
trap 'rm -rf "$dir"; eval "$restore_redis"' EXIT
token=$(node bench/make-jwt.ts "$dir")
printf %s "$token" >"$dir/token"
if [[ ${1:-} == --half-load ]]; then
  shift
  node bench/run.ts --targets floor --no-compile --rate-of-floor 0.5 --header "Authorization: Bearer $token" \
    --target "sluice:18110:bench/peers-target.sh" --target "sluice-chain:18112:bench/peers-target.sh --chain $dir" \
    --target "sluice-chain-sync:18114:bench/peers-target.sh --chain $dir 50" "$@"
  exit
fi
targets=nginx,bare-node-undici,sluice,sluice-chain,sluice-chain-sync
extra=()
if [[ -n ${BENCH_BEFORE:-} ]]; then
  before=$(cd "$BENCH_BEFORE" && pwd)
  targets+=,sluice-before,sluice-chain-before
  extra=(--target sluice-before 18114 "$before/bench/peers-target.sh"
    --target sluice-chain-before 18116 "$before/bench/peers-target.sh --chain $dir")
fi
../shared/bench/peers.sh --out "$out" -t "$targets" -H "Authorization: Bearer $token" \
  --target sluice 18110 'bench/peers-target.sh' \
  --target sluice-chain 18112 "bench/peers-target.sh --chain $dir" \
  --target sluice-chain-sync 18118 "bench/peers-target.sh --chain $dir 50" "${extra[@]}" "$@"
node bench/ratios.ts "$(ls -t "$out"/peers-*.json | head -1)" --plain sluice,sluice-before \
  --chain sluice-chain,sluice-chain-sync,sluice-chain-before
