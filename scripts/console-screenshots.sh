#!/usr/bin/env bash
# Refreshes the pictures of docs/console.md: runs the page tests (test/web, Chromium) one file at a
# time with WEB_SCREENSHOT_DOCS=1 (a 1100x800 view of each page's top) and keeps the main pages as
# docs/console/<name>.png (each under 150 KB). Needs what the page tests need (PGlite or Postgres,
# Temporal, Chromium at /usr/bin/chromium or CHROMIUM_PATH).
#   npm run docs:screenshots            every page
#   npm run docs:screenshots -- provider   only the pictures of test/web/provider.test.ts
set -uo pipefail
cd "$(dirname "$0")/.."
shots="$(mktemp -d)"
trap 'rm -rf "$shots"' EXIT
# The test file that takes each picture docs/console.md shows.
pages=(
  "provider:provider listing-wizard listing-wizard-events listing-wizard-event-prices listing-wizard-revision review-queue"
  "market:market tool-listing"
  "console:sign-in console-home run usage"
  "console-pages:runs credentials-list"
  "try-and-buy:try-tool-result"
)
mkdir -p docs/console
status=0
for entry in "${pages[@]}"; do
  file="${entry%%:*}"
  if [ $# -gt 0 ] && [[ " $* " != *" $file "* ]]; then continue; fi
  echo "console-screenshots: test/web/$file.test.ts" >&2
  WEB_SCREENSHOT_DIR="$shots" WEB_SCREENSHOT_DOCS=1 bash scripts/with-node.sh ./node_modules/.bin/mocha --no-config \
    -r tsx/cjs -r test/support/stack/root-hooks.ts --timeout 120000 --exit "test/web/$file.test.ts" >&2 || status=1
  for name in ${entry#*:}; do
    if [ ! -f "$shots/$name.png" ]; then
      echo "console-screenshots: no $name.png was taken" >&2
      status=1
      continue
    fi
    cp "$shots/$name.png" "docs/console/$name.png"
    size=$(stat -c %s "docs/console/$name.png")
    echo "console-screenshots: docs/console/$name.png ($size bytes)" >&2
    if [ "$size" -gt 153600 ]; then
      echo "console-screenshots: docs/console/$name.png is over 150 KB" >&2
      status=1
    fi
  done
done
exit $status
