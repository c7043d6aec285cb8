#!/usr/bin/env bash
# Installs the official MCP conformance suite's CLI and the Node 22 it needs (the project itself runs on
# Node 20), idempotently, into the user's cache outside the clone: neither goes into node_modules or
# package.json. test/support/conformance-cli.ts finds them at the same paths. Called by scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

# The pins live in scripts/conformance-tools.json, which the tests read too.
pin() { node -p "require('./scripts/conformance-tools.json').$1"; }
CONFORMANCE_VERSION=$(pin conformance)
NODE22_VERSION=$(pin node)
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/scrape-platform"
say() { echo "[setup] $*" >&2; }

case "$(uname -m)" in
  x86_64 | amd64) node_arch=x64 ;;
  aarch64 | arm64) node_arch=arm64 ;;
  *) say "no Node 22 package for $(uname -m); the MCP conformance tests need one"; exit 1 ;;
esac

# npm-installs <spec> into <dir> unless <dir>/.installed exists; a failed install leaves nothing behind.
install_once() {
  local dir=$1 spec=$2
  [ -f "$dir/.installed" ] && return 0
  say "installing $spec into $dir (once)"
  local tmp="$dir.tmp.$$"
  rm -rf "$tmp" && mkdir -p "$tmp"
  if ! npm install --prefix "$tmp" --no-audit --no-fund --no-save --ignore-scripts --loglevel=error "$spec" >&2; then
    rm -rf "$tmp"
    say "could not install $spec"
    exit 1
  fi
  touch "$tmp/.installed"
  rm -rf "$dir" && mv "$tmp" "$dir"
}

# Node 22 from the npm package that carries the official build (bin/node).
node_dir="$CACHE_ROOT/node-$NODE22_VERSION-linux-$node_arch"
install_once "$node_dir" "node-linux-$node_arch@$NODE22_VERSION"
node_bin="$node_dir/node_modules/node-linux-$node_arch/bin/node"
if ! "$node_bin" --version >/dev/null; then
  say "$node_bin does not run"
  exit 1
fi

install_once "$CACHE_ROOT/mcp-conformance-$CONFORMANCE_VERSION" "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION"
