#!/usr/bin/env bash
# Installs the official MCP conformance suite's CLI (pinned in scripts/tool-pins.json), idempotently, into
# the user's cache outside the clone: it goes neither into node_modules nor into package.json.
# test/support/stack/conformance-cli.ts finds it at the same path and runs it on the project's Node (it needs
# Node >= 22). Called by scripts/setup.sh.
set -euo pipefail
source "$(dirname "$0")/install-once.sh"

version=$(pin conformance)
install_once "$CACHE_ROOT/mcp-conformance-$version" "@modelcontextprotocol/conformance@$version"
