#!/usr/bin/env bash
# The shell twin of examples/ci/github-actions.yml: the same lines, in the same order, without a CI
# service.  Run it from the root of a plugin repository laid out as the workflow says:
#
#   HARNESS_SRC=path/to/harness WORK=$(mktemp -d) bash path/to/memory-gate.sh
#
# What the runner does around the lines is done here by hand: the checkouts are the current folder and
# HARNESS_SRC; setup-python is whatever python3 is on PATH; the cache actions copy HARNESS_CACHE_DIR to
# and from CACHE_STORE/<key> (restore: the exact key, else the newest entry with the prefix; save: after
# the embed step, when the key was not hit); upload-artifact copies OUT to ARTIFACTS; GITHUB_OUTPUT,
# GITHUB_PATH and GITHUB_STEP_SUMMARY are files under WORK.  The exit status is the gate's.
# tests/test_ci_example.py runs this script in a fresh venv and checks that every line of the
# workflow's `run:` blocks appears here.
set -euo pipefail

: "${HARNESS_SRC:?set HARNESS_SRC to the harness source tree the wheel is built from}"
: "${WORK:?set WORK to a scratch folder (the temp folder of the runner)}"
export EXPERIMENT=${EXPERIMENT:-ci/memory/experiment.toml}
export BASELINE=${BASELINE:-ci/memory/baseline.json}
export GATE_FILE=${GATE_FILE:-ci/memory/gate.toml}
export RUN_FILE=${RUN_FILE:-}
export QRELS=${QRELS:-}
export OUT=${OUT:-out/memory}
export HARNESS_VENV=${HARNESS_VENV:-$WORK/harness-venv}
export WHEELS=${WHEELS:-$WORK/wheels}
export HARNESS_CACHE_DIR=${HARNESS_CACHE_DIR:-$WORK/harness-cache}
CACHE_STORE=${CACHE_STORE:-$WORK/cache-store}
ARTIFACTS=${ARTIFACTS:-$WORK/artifacts}
export GITHUB_OUTPUT=$WORK/github-output GITHUB_PATH=$WORK/github-path
export GITHUB_STEP_SUMMARY=${GITHUB_STEP_SUMMARY:-$WORK/step-summary.md}
: > "$GITHUB_OUTPUT"
: > "$GITHUB_PATH"
step() { printf '\n== %s (%s)\n' "$1" "$(date +%T)"; }
output() { sed -n "s/^$1=//p" "$GITHUB_OUTPUT" | tail -n 1; }

step "Install the harness from its wheel"
python3 -m venv "$HARNESS_VENV"
"$HARNESS_VENV/bin/pip" wheel --no-deps "$HARNESS_SRC" -w "$WHEELS"
"$HARNESS_VENV/bin/pip" install "$WHEELS"/harness-*.whl
echo "$HARNESS_VENV/bin" >> "$GITHUB_PATH"
PATH="$(tac "$GITHUB_PATH" | paste -sd:):$PATH"  # what the runner does with GITHUB_PATH

if [ -z "$RUN_FILE" ]; then
  step "Embedding cache key (model id + hash of every text the run embeds)"
  echo "key=$(harness cache-key "$EXPERIMENT")" >> "$GITHUB_OUTPUT"
  echo "prefix=$(harness cache-key "$EXPERIMENT" --prefix)" >> "$GITHUB_OUTPUT"
  key=$(output key)
  prefix=$(output prefix)

  step "actions/cache/restore"
  hit=false
  restored=""
  if [ -d "$CACHE_STORE/$key" ]; then
    hit=true
    restored="$CACHE_STORE/$key"
  elif [ -d "$CACHE_STORE" ]; then
    restored=$(ls -1dt "$CACHE_STORE/$prefix"* 2>/dev/null | head -n 1 || true)
  fi
  if [ -n "$restored" ]; then
    mkdir -p "$HARNESS_CACHE_DIR"
    cp -R "$restored"/. "$HARNESS_CACHE_DIR"/
  fi
  echo "cache-hit=$hit restored-from=${restored:-nothing}"

  step "Embed what the cache lacks"
  harness embed "$EXPERIMENT"

  if [ "$hit" != true ]; then
    step "actions/cache/save"
    mkdir -p "$CACHE_STORE/$key"
    cp -R "$HARNESS_CACHE_DIR"/. "$CACHE_STORE/$key"/
  fi

  step "Run the experiment"
  harness run "$EXPERIMENT" --out "$OUT"
  harness report "$OUT/results.json" --out "$OUT/report.html"
else
  step "Or score your own system's run file"
  harness eval --run "$RUN_FILE" --qrels "$QRELS" --json "$OUT/eval.json"
fi

step "Gate against the committed baseline"
status=0
results="$OUT/results.json"
if [ -n "$RUN_FILE" ]; then results="$OUT/eval.json"; fi
harness gate "$results" --baseline "$BASELINE" --gate-file "$GATE_FILE" --junit "$OUT/junit.xml" --markdown "$OUT/gate.md" || status=$?

if [ -z "$RUN_FILE" ]; then
  step "Per-query diff against the baseline"
  harness diff "$BASELINE" "$OUT/results.json" --limit 10 --markdown "$OUT/diff.md" --html "$OUT/diff.html"
fi

step "actions/upload-artifact"
mkdir -p "$ARTIFACTS"
cp -R "$OUT"/. "$ARTIFACTS"/
exit "$status"
