# The commands the README names. `make test` is what CI runs; `make serve` starts the embedded service.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The CPU build on machines without a GPU; an unpinned torch would pull several GB of CUDA packages.
TORCH_SPEC ?= torch==2.13.0
STAMP := $(VENV)/.installed

.PHONY: setup system-deps serve test lint typecheck imports pytest bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q "$(TORCH_SPEC)"
	$(BIN)/pip install -q -e ".[service,scaleout,dev]"
	touch $(STAMP)

setup: $(STAMP)

# Best effort: the sandbox tests need bubblewrap and util-linux's unshare, the page tests Debian's chromium,
# the compose-file check Debian's docker-compose.
# Where they cannot be installed (not root, no apt-get, no network) the tests that need them are skipped
# and say why.
system-deps:
	@missing=""; \
	command -v bwrap >/dev/null 2>&1 || missing="$$missing bubblewrap"; \
	command -v unshare >/dev/null 2>&1 || missing="$$missing util-linux"; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	command -v docker-compose >/dev/null 2>&1 || missing="$$missing docker-compose"; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null) \
			|| echo "system-deps: could not install$$missing; the sandbox tests will be skipped"; \
	else \
		echo "system-deps: missing$$missing (needs root and apt-get); the sandbox tests will be skipped"; \
	fi

serve: setup
	$(BIN)/kernelgrade serve

lint: setup
	$(BIN)/ruff check src tests bench

typecheck: setup
	$(BIN)/mypy

imports: setup
	$(BIN)/lint-imports

pytest: setup system-deps
	$(BIN)/pytest

test: lint typecheck imports pytest

bench: setup
	$(BIN)/python bench/compile_cache.py
	$(BIN)/python bench/service_bench.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
