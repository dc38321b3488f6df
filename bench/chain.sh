#!/usr/bin/env bash
# The plugin chain of a typical API route, measured with the shared peers harness
# (../shared/bench/peers.sh) in one run: the bare Node floor, nginx, sluice proxying plainly,
# and sluice with jwt (RS256, static key from a Secret) + rate-limiting (policy redis, a limit
# never reached) + request-transformer. Every target gets the same Authorization header.
# Needs Redis on 127.0.0.1:6379. Usage: bench/chain.sh [extra peers.sh options, e.g. -r 2]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PATH="$(scripts/node-env.sh):$PATH"
dir=$(mktemp -d "${TMPDIR:-/tmp}/sluice-chain-XXXXXX")
trap 'rm -rf "$dir"' EXIT
token=$(node bench/make-jwt.ts "$dir")
printf %s "$token" >"$dir/token"
../shared/bench/peers.sh -t nginx,bare-node-undici,sluice,sluice-chain -H "Authorization: Bearer $token" \
  --target sluice 18110 'bench/peers-target.sh' \
  --target sluice-chain 18112 "bench/peers-target.sh --chain $dir" "$@"
