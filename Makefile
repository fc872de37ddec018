# Two commands do all the set-up: `make demo` and `make test`. Both create .venv when it is missing.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Quiet installs: one line says what is happening; only errors are printed. The venv's pip installs uv, and uv
# installs gpubot and its dependencies: it resolves and downloads in parallel and links from its cache (a fresh
# clone's `make test` installs in ~10 s with a warm cache and well under a minute cold, against ~2 min with pip).
PIP := $(BIN)/pip install -qq --disable-pip-version-check --no-warn-script-location
UV_INSTALL := VIRTUAL_ENV=$(abspath $(VENV)) $(BIN)/uv pip install -q
# Python's bytecode cache on: without it every run compiles every import again, and pytest rewrites every test
# module's asserts again (35 s of collection instead of 19 on 2 CPUs).
unexport PYTHONDONTWRITEBYTECODE
# The suite runs in several processes (pytest-xdist; docs/testing.md): each test owns its database, ports and
# directory. Most of the end-to-end tests wait on processes and clocks, so more workers than CPUs pay: on 2 CPUs six
# keep both busy after the first minute, where four left them a third idle (docs/testing.md, "Figures").
TEST_WORKERS ?= 6
PYTEST := $(BIN)/python -m pytest

.PHONY: demo sandbox test check lint unit bench reliability clean i18n

$(BIN)/python:
	@$(PYTHON) -m venv $(VENV)

# Also for a venv made before gpubot installed with uv.
$(BIN)/uv: | $(BIN)/python
	@$(PIP) uv

# The demo draws charts (the digest's), so it installs the charts extra.
$(VENV)/.installed: pyproject.toml | $(BIN)/uv
	@echo "Installing gpubot into $(VENV) (once, and again when pyproject.toml changes)…"
	@$(UV_INSTALL) -e '.[charts]'
	@touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/uv
	@echo "Installing gpubot and its development tools into $(VENV)…"
	@$(UV_INSTALL) -e '.[dev]'
	@touch $@ $(VENV)/.installed

# DEMO_ARGS passes options on, e.g. `make demo DEMO_ARGS="--database other-demo.db"`.
demo: $(VENV)/.installed
	@$(BIN)/gpubot demo $(DEMO_ARGS); status=$$?; \
		echo "gpubot is in $(VENV): $(BIN)/gpubot report cost --database gpubot-demo.db (or 'source $(BIN)/activate')"; \
		exit $$status

# The demo as a web page on http://127.0.0.1:8080 that looks and behaves like a Slack channel.
sandbox: $(VENV)/.installed
	@$(BIN)/gpubot demo --web $(DEMO_ARGS)

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .

# Everything, in TEST_WORKERS processes, then the 15 slowest tests. pytest exits 5 when it collected no tests: that
# is a failure too.
test: lint
	@$(PYTEST) -n $(TEST_WORKERS) --dist loadgroup --durations=15; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing" >&2; exit 1; fi; exit $$rc

# The fast loop (under 45 s): lint, then the unit tests — the pure rules, the architecture test and the catalogs
# check among them.
check: lint
	@$(PYTEST) -n auto tests/unit

# Benchmarks against their floors (see docs/benchmarks.md); numbers never fail the build.
bench: $(VENV)/.installed-dev
	$(BIN)/python -m bench

# The reliability suites at full size (100 crash trials, 300-booking fault storm, 500 bookings on two replicas…);
# `make test` runs their short form. Figures are printed at the end and kept in test-artifacts/reliability-full.txt.
reliability: $(VENV)/.installed-dev
	GPUBOT_RELIABILITY=full $(BIN)/python -m pytest tests/reliability -p no:randomly -p no:cacheprovider

# The message catalogs (docs/operations.md, "Languages"): extract every message people read from the code into
# bot/locale/gpubot.pot, merge it into each language's .po, then check that every message is translated (the same
# check runs in `make test`, reading the two variables below).
I18N_SOURCES := bot gpubot domain scheduling
I18N_KEYWORDS := -k _ -k gettext -k ngettext:1,2 -k N_ -k fail -k UserError -k Refused -k Forbidden -k NotFound -k NotYours
i18n: $(VENV)/.installed-dev
	@$(BIN)/pybabel -q extract -F babel.cfg --no-location --sort-output --omit-header -w 120 -c TRANSLATORS: \
		--no-default-keywords $(I18N_KEYWORDS) -o bot/locale/gpubot.pot $(I18N_SOURCES)
	@$(BIN)/pybabel -q update -i bot/locale/gpubot.pot -d bot/locale -D gpubot --no-fuzzy-matching -w 120 \
		--ignore-obsolete --omit-header
	$(BIN)/python -m pytest -q -p no:randomly tests/unit/bot/test_catalogs.py

unit: $(VENV)/.installed-dev
	$(PYTEST) -n auto tests/unit

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache gpubot-demo.db* replay-out
