#!/usr/bin/env bash
# Installs what the service and its tests need, idempotently; fast when everything is present.
#   the Node.js LTS when the machine's is older, npm dependencies (exactly the lockfile's), Debian's
#   Chromium (+ Xvfb for headed browsers), the Temporal CLI, and the MCP conformance suite's CLI.
set -euo pipefail
cd "$(dirname "$0")/.."

TEMPORAL_VERSION="v1.5.1"
CACHE_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/scrape-platform/bin"
say() { echo "[setup] $*" >&2; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi
}

# 0. The Node.js LTS (scripts/tool-pins.json) when the node on PATH is older; npm scripts run with it.
bash scripts/setup-node.sh

# 1. npm dependencies, exactly as package-lock.json pins them (`npm ci`), reinstalled only when it changed.
lock_hash=$(sha256sum package-lock.json 2>/dev/null | cut -c1-16 || echo none)
if [ ! -f node_modules/.setup-stamp ] || [ "$(cat node_modules/.setup-stamp)" != "$lock_hash" ]; then
  say "installing npm dependencies"
  npm ci --no-audit --no-fund >&2
  echo "$lock_hash" > node_modules/.setup-stamp
fi

# 2. Chromium from Debian (Playwright's own browser download cannot work offline) and Xvfb.
chromium_path="${CHROMIUM_PATH:-/usr/bin/chromium}"
if [ ! -x "$chromium_path" ] || ! command -v Xvfb >/dev/null; then
  say "installing Debian's chromium and xvfb"
  if ! { as_root apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq chromium xvfb >&2; }; then
    say "could not install chromium; install it yourself (apt-get install chromium xvfb) or set CHROMIUM_PATH"
    exit 1
  fi
fi

# 2a. Chromium's headless shell (the same Chromium without the browser UI; what Playwright runs for headless):
# headless contexts run in it at a third of the full browser's CPU. Optional: without it they run in chromium.
if [ -z "${CHROMIUM_PATH:-}" ] && [ -z "${CHROMIUM_HEADLESS_PATH:-}" ] && [ ! -x /usr/bin/chromium-headless-shell ]; then
  say "installing Debian's chromium-headless-shell"
  { as_root apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq chromium-headless-shell >&2; } ||
    say "could not install chromium-headless-shell; headless browsers will run in the full chromium"
fi

# 2b. jq and python3: the docs tests run the guides' shell and Python samples as readers would.
if ! command -v jq >/dev/null || ! command -v python3 >/dev/null; then
  say "installing jq and python3 (the guides' samples use them)"
  if ! { as_root apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq jq python3 >&2; }; then
    say "could not install jq/python3; install them yourself (apt-get install jq python3)"
    exit 1
  fi
fi

# 3. The Temporal CLI: TEMPORAL_CLI_PATH, else our cache, else one on PATH, else build it with Go into the cache.
if [ -n "${TEMPORAL_CLI_PATH:-}" ] && [ -x "$TEMPORAL_CLI_PATH" ]; then
  :
elif [ -x "$CACHE_DIR/temporal" ]; then
  :
elif command -v temporal >/dev/null; then
  :
elif command -v go >/dev/null || [ -x /usr/local/go/bin/go ]; then
  go_bin=$(command -v go || echo /usr/local/go/bin/go)
  say "building the Temporal CLI $TEMPORAL_VERSION with Go into $CACHE_DIR (once; takes a few minutes)"
  mkdir -p "$CACHE_DIR"
  GOBIN="$CACHE_DIR" "$go_bin" install "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_VERSION" >&2
else
  say "the Temporal CLI is missing. Install Go and rerun, or install temporal (https://docs.temporal.io/cli) and put it on PATH,"
  say "or point TEMPORAL_CLI_PATH at it. With your own Temporal server, set TEMPORAL_ADDRESS instead."
  exit 1
fi

# 4. The official MCP conformance CLI (test/mcp-conformance*.test.ts), pinned, in the same cache.
bash scripts/setup-conformance.sh
