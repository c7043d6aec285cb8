# Sourced by the setup scripts: npm-installs a pinned package into the user's cache outside the clone.
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/scrape-platform"
say() { echo "[setup] $*" >&2; }

# The pins live in scripts/tool-pins.json, which the tests read too.
PINS_FILE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/tool-pins.json"
pin() { node -p "require('$PINS_FILE').$1"; }

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
