#!/usr/bin/env bash
# The project runs on the current Node.js LTS (pinned in scripts/tool-pins.json). When the `node` on PATH
# is older than its major version, installs the official build from the npm registry's `node-linux-<arch>`
# package into the cache outside the clone, once; scripts/with-node.sh then puts it first on PATH for
# every npm script. A machine with a current Node on PATH uses its own and installs nothing.
set -euo pipefail
source "$(dirname "$0")/install-once.sh"

version=$(pin node)
if [ "$(node -p 'process.versions.node.split(".")[0]')" -ge "${version%%.*}" ]; then
  exit 0
fi
case "$(uname -m)" in
  x86_64 | amd64) node_arch=x64 ;;
  aarch64 | arm64) node_arch=arm64 ;;
  *) say "no Node.js package for $(uname -m) on the npm registry; install Node ${version%%.*} yourself"; exit 1 ;;
esac
dir="$CACHE_ROOT/node-$version-linux-$node_arch"
install_once "$dir" "node-linux-$node_arch@$version"
if ! "$dir/node_modules/node-linux-$node_arch/bin/node" --version >/dev/null; then
  say "$dir/node_modules/node-linux-$node_arch/bin/node does not run"
  exit 1
fi
