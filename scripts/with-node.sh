#!/usr/bin/env bash
# Runs a command with the Node.js LTS the project needs (scripts/tool-pins.json) first on PATH: the one
# already on PATH when it is current, else the build scripts/setup-node.sh installed into the cache.
set -euo pipefail
version=$(node -p "require('$(cd "$(dirname "$0")" && pwd)/tool-pins.json').node")
major=${version%%.*}
if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt "$major" ]; then
  case "$(uname -m)" in aarch64 | arm64) node_arch=arm64 ;; *) node_arch=x64 ;; esac
  bin="${XDG_CACHE_HOME:-$HOME/.cache}/scrape-platform/node-$version-linux-$node_arch/node_modules/node-linux-$node_arch/bin"
  if [ ! -x "$bin/node" ]; then
    bash "$(dirname "$0")/setup-node.sh"
  fi
  export PATH="$bin:$PATH"
fi
exec "$@"
