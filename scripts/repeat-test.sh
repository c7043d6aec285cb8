#!/usr/bin/env bash
# Runs one test (a mocha --grep pattern in one file) N times in a row, each in a fresh mocha process,
# and reports how many passed. For proving a flaky test fixed:
#   npm run test:repeat -- test/scrape/browser-render.test.ts "runs onLoaded before capturing" 30
set -uo pipefail
cd "$(dirname "$0")/.."
file="${1:?usage: repeat-test.sh FILE GREP [N]}"
pattern="${2:?usage: repeat-test.sh FILE GREP [N]}"
runs="${3:-30}"
mocha=./node_modules/.bin/mocha
[ -x "$mocha" ] || { echo "repeat-test: $mocha is missing (run npm install)" >&2; exit 2; }
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
passed=0
for i in $(seq 1 "$runs"); do
  if "$mocha" --no-config -r tsx/cjs -r test/support/stack/root-hooks.ts --timeout 120000 --exit "$file" --grep "$pattern" >"$log" 2>&1 \
     && grep -qE '^ +1 passing' "$log" && ! grep -qE '[0-9]+ failing' "$log"; then
    passed=$((passed + 1))
    echo "run $i/$runs: passed"
  else
    echo "run $i/$runs: FAILED"
    tail -30 "$log"
  fi
done
echo "passed $passed/$runs"
[ "$passed" -eq "$runs" ]
