#!/usr/bin/env bash
# The data plane next to the Node floor with the shared peers harness (../shared/bench/peers.sh),
# in one run: the bare Node floor (bare-node-undici), nginx, sluice proxying plainly, and sluice
# with the chain of a typical API route: jwt (RS256, static key from a Secret) + rate-limiting
# (policy redis, a limit never reached) + request-transformer. Every target gets the same
# Authorization header. Then bench/ratios.ts prints each target's CPU µs/req, p99 and peak RSS
# as ratios to the floor of the same run.
#
# BENCH_BEFORE=DIR adds sluice-before and sluice-chain-before, run from another checkout (DIR, a
# `git worktree add DIR <commit>` with node_modules): a change and its base, measured in one run.
# Needs Redis on 127.0.0.1:6379. Usage: bench/chain.sh [extra peers.sh options, e.g. -r 3, -d 2 -w 1]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PATH="$(scripts/node-env.sh):$PATH"
dir=$(mktemp -d "${TMPDIR:-/tmp}/sluice-chain-XXXXXX")
out="bench/results"
restore_redis=$(bench/redis-core.sh)
trap 'rm -rf "$dir"; eval "$restore_redis"' EXIT
token=$(node bench/make-jwt.ts "$dir")
printf %s "$token" >"$dir/token"
targets=nginx,bare-node-undici,sluice,sluice-chain
extra=()
if [[ -n ${BENCH_BEFORE:-} ]]; then
  before=$(cd "$BENCH_BEFORE" && pwd)
  targets+=,sluice-before,sluice-chain-before
  extra=(--target sluice-before 18114 "$before/bench/peers-target.sh"
    --target sluice-chain-before 18116 "$before/bench/peers-target.sh --chain $dir")
fi
../shared/bench/peers.sh --out "$out" -t "$targets" -H "Authorization: Bearer $token" \
  --target sluice 18110 'bench/peers-target.sh' \
  --target sluice-chain 18112 "bench/peers-target.sh --chain $dir" "${extra[@]}" "$@"
node bench/ratios.ts "$(ls -t "$out"/peers-*.json | head -1)" --plain sluice,sluice-before --chain sluice-chain,sluice-chain-before
