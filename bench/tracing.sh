#!/usr/bin/env bash
# What tracing costs, with the shared peers harness (../shared/bench/peers.sh), in one run: the
# Node floor, sluice proxying plainly with tracing off (no OTEL_* variables: the SDK is never
# loaded), and the same with the OTLP exporter configured through the standard variables at 1 %
# (parentbased_traceidratio 0.01) and at 100 % sampling. The spans go to bench/otlp-sink.ts (an
# OTLP/HTTP receiver that counts and drops them) on the load core; the client sends no
# traceparent, so the sampler decides every trace. Then bench/ratios.ts prints each target's CPU
# µs/req, p99 and peak RSS against the floor of the same run.
#
# BENCH_BEFORE=DIR adds sluice-before (tracing off) from another checkout: "off is within noise of
# the build before". Usage: bench/tracing.sh [extra peers.sh options, e.g. -r 2, -s get]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PATH="$(scripts/node-env.sh):$PATH"
out="bench/results"
sink_port=${BENCH_OTLP_PORT:-18130}
taskset -c "${BENCH_LOAD_CORE:-0}" node bench/otlp-sink.ts "$sink_port" &
sink=$!
trap 'kill -TERM $sink 2>/dev/null; wait $sink 2>/dev/null || true' EXIT
otel="OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$sink_port OTEL_SERVICE_NAME=sluice-bench"
targets=bare-node-undici,sluice,sluice-trace-1,sluice-trace-100
extra=()
if [[ -n ${BENCH_BEFORE:-} ]]; then
  before=$(cd "$BENCH_BEFORE" && pwd)
  targets+=,sluice-before
  extra=(--target sluice-before 18114 "$before/bench/peers-target.sh")
fi
../shared/bench/peers.sh --out "$out" -t "$targets" \
  --target sluice 18110 'bench/peers-target.sh' \
  --target sluice-trace-1 18118 "env $otel OTEL_TRACES_SAMPLER=parentbased_traceidratio OTEL_TRACES_SAMPLER_ARG=0.01 bench/peers-target.sh" \
  --target sluice-trace-100 18120 "env $otel OTEL_TRACES_SAMPLER=parentbased_always_on bench/peers-target.sh" \
  "${extra[@]}" "$@"
node bench/ratios.ts "$(ls -t "$out"/peers-*.json | head -1)" --plain sluice,sluice-before --chain none
