#!/usr/bin/env bash
# Moves the local redis-server (127.0.0.1:6379, the one the benches use) onto the load core for a
# bench run, and prints the command that puts it back (nothing when there is no such process or
# no taskset). Left to the scheduler, Redis lands on the proxy's core at times: every proxy→Redis
# write then wakes it there and preempts the proxy. Same code, same hour: the jwt + rate-limiting
# (redis) chain measured 41–47 CPU µs per GET with Redis free to move, 35–38 with it on core 0.
# Usage: restore=$(bench/redis-core.sh) … eval "$restore". Env: BENCH_LOAD_CORE (default 0).
# A Redis found on the load core alone is put back on every core (see below).
set -uo pipefail
command -v taskset >/dev/null || exit 0
pid=$(pgrep -f 'redis-server.*:6379( |$)' | head -1)
[[ -n $pid ]] || exit 0
was=$(taskset -pc "$pid" 2>/dev/null | sed 's/.*: //')
[[ -n $was ]] || exit 0
# Found on the load core alone: an earlier run's move that was not undone (a run killed midway, or
# one inside another, which then "put back" the load core). Put it back on every core instead.
if [[ $was == "${BENCH_LOAD_CORE:-0}" ]] && (($(nproc) > 1)); then was="0-$(($(nproc) - 1))"; fi
taskset -pc "${BENCH_LOAD_CORE:-0}" "$pid" >/dev/null 2>&1 || exit 0
echo "taskset -pc '$was' $pid >/dev/null 2>&1"
