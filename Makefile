# The commands the README names. `make test` is what CI runs; `make serve` starts the embedded service.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The CPU build on machines without a GPU; an unpinned torch would pull several GB of CUDA packages.
TORCH_SPEC ?= torch==2.13.0
STAMP := $(VENV)/.installed

.PHONY: setup sandbox-deps system-deps serve test lint typecheck imports pytest bench wheelhouse clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q "$(TORCH_SPEC)"
	$(BIN)/pip install -q -e ".[service,scaleout,dev]"
	touch $(STAMP)

setup: $(STAMP)

# Best effort: install the Debian packages of the commands that are missing, where this is root with apt-get.
# $(1): command:package pairs; $(2): the target's name; $(3): what happens without them (no commas).
define apt_install
	@missing=""; \
	for pair in $(1); do command -v "$${pair%%:*}" >/dev/null 2>&1 || missing="$$missing $${pair##*:}"; done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null) \
			|| echo "$(2): could not install$$missing; $(3)"; \
	else \
		echo "$(2): missing$$missing (needs root and apt-get); $(3)"; \
	fi
endef

# The sandbox that serve, worker and eval run submissions in: bubblewrap, else util-linux's unshare.
SANDBOX_TOOLS ?= bwrap:bubblewrap unshare:util-linux
# Only the tests need these: the page tests Debian's chromium, the compose-file check Debian's docker-compose.
TEST_TOOLS ?= chromium:chromium docker-compose:docker-compose

sandbox-deps:
	$(call apt_install,$(SANDBOX_TOOLS),sandbox-deps,without a working sandbox kernelgrade refuses to grade and the sandbox tests are skipped (README: Sandboxing))

# Where they cannot be installed (not root, no apt-get, no network) the tests that need them are skipped
# and say why.
system-deps: sandbox-deps
	$(call apt_install,$(TEST_TOOLS),system-deps,the page and compose-file tests will be skipped)

# Flags for `kernelgrade serve`, e.g. `make serve SERVE_ARGS="--port 8080"` (KERNELGRADE_PORT=8080 works too).
SERVE_ARGS ?=

serve: setup sandbox-deps
	$(BIN)/kernelgrade serve $(SERVE_ARGS)

lint: setup
	$(BIN)/ruff check src tests bench

typecheck: setup
	$(BIN)/mypy

imports: setup
	$(BIN)/lint-imports

# Test processes at once; a file's tests stay in one process, so module fixtures (a warm judge) are shared. Tests
# marked `alone` compare timings with each other, which another test process's builds beside them can push past
# their bands (a reference against itself within 3x): they run afterwards, in one process. Three on a 2-core
# machine: the tests wait on children, servers and brokers much of the time (a run at two used 37 of its 96
# core-minutes), and a fresh-clone .ci/run there took 43.5 min at three against 47.9 min at two.
PYTEST_WORKERS ?= 3

pytest: setup system-deps
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadfile -m "not alone"
	$(BIN)/pytest -m alone

test: lint typecheck imports pytest

bench: setup
	$(BIN)/python bench/compile_cache.py
	$(BIN)/python bench/service_bench.py

# Wheels of everything the service and its workers need except torch, for a GPU host with no package index
# (README: A GPU host without a package index): for that host's Python (WHEEL_PYTHON) on x86-64 Linux, with
# their own dependencies resolved here. torch and numpy are left out: the host's own (a CUDA build of torch, and
# the numpy it was installed with) are the ones to use, and a second numpy on the path would shadow the first.
WHEELHOUSE ?= wheelhouse
WHEEL_PYTHON ?= 3.12
WHEEL_EXTRAS ?= service scaleout
# pip takes a manylinux tag only as named; these cover the wheels of today's packages.
WHEEL_PLATFORMS ?= manylinux_2_39_x86_64 manylinux_2_35_x86_64 manylinux_2_34_x86_64 manylinux_2_31_x86_64 \
	manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 \
	manylinux2014_x86_64 manylinux1_x86_64 linux_x86_64
WHEEL_REQUIREMENTS = $(shell $(BIN)/python -c 'import re, shlex, tomllib; \
	p = tomllib.load(open("pyproject.toml", "rb"))["project"]; \
	extras = [r for e in "$(WHEEL_EXTRAS)".split() for r in p["optional-dependencies"][e]]; \
	print(" ".join(shlex.quote(r) for r in p["dependencies"] + extras \
	if re.match(r"[\w.-]+", r).group() not in ("torch", "numpy")))')

wheelhouse: setup
	$(BIN)/pip download -q --only-binary=:all: --python-version $(WHEEL_PYTHON) --implementation cp \
		$(addprefix --platform ,$(WHEEL_PLATFORMS)) -d $(WHEELHOUSE) $(WHEEL_REQUIREMENTS)
	@echo "$(WHEELHOUSE): $$(ls $(WHEELHOUSE) | wc -l) wheels for Python $(WHEEL_PYTHON)"

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
