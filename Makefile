# Two commands do all setup: `make run` and `make test`. Both create .venv on first use.
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin
# Django 6 needs Python >= 3.12: the first interpreter found that is new enough.
PYTHON ?= $(shell for p in python3.14 python3.13 python3.12 python3 $$HOME/.pyenv/versions/3.1[2-9]*/bin/python3 /usr/local/bin/python3.1[2-9] /usr/bin/python3.1[2-9]; do \
	command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null && { command -v $$p; break; }; done)
NIST ?= ../shared/data/nist-800-53/controls.jsonl
PYTEST_ARGS ?=

.PHONY: run test lint lock worker bench clean

$(BIN)/.installed: pyproject.toml client/pyproject.toml requirements-dev.lock
	@test -n "$(PYTHON)" || { echo "Python 3.12 or newer is required (Django 6)."; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# The locked set (requirements-dev.lock, with hashes) is installed by uv when it can be had (a
	# plain PyPI package: seconds instead of minutes), else by pip; both check every hash.
	command -v uv >/dev/null || test -x $(BIN)/uv || $(BIN)/python -m pip install --quiet uv || true
	if uv=$$(command -v uv || echo $(BIN)/uv) && test -x "$$uv"; then \
	  "$$uv" pip install --quiet --python $(BIN)/python --require-hashes -r requirements-dev.lock && \
	  "$$uv" pip install --quiet --python $(BIN)/python --no-deps -e . -e client; \
	else \
	  $(BIN)/python -m pip install --quiet --require-hashes -r requirements-dev.lock && \
	  $(BIN)/python -m pip install --quiet --no-deps -e . -e client; \
	fi
	touch $@

# After changing a dependency in pyproject.toml: rewrite both locks (needs uv, see above). The
# runtime lock (the compose image's) is constrained by the development one: the same versions.
lock: $(BIN)/.installed
	uv=$$(command -v uv || echo $(BIN)/uv); \
	"$$uv" pip compile pyproject.toml --extra dev --generate-hashes --python-version 3.12 \
	  --universal --quiet -o requirements-dev.lock && \
	"$$uv" pip compile pyproject.toml --generate-hashes --python-version 3.12 --universal \
	  --quiet -c requirements-dev.lock -o requirements.lock

run: $(BIN)/.installed
	DEBUG=true $(BIN)/python manage.py migrate --no-input
	DEBUG=true $(BIN)/python manage.py seed_demo $(if $(wildcard $(NIST)),--nist $(NIST))
	@echo "Serving on http://127.0.0.1:8000"
	DEBUG=true $(BIN)/python manage.py runserver 127.0.0.1:8000

test: $(BIN)/.installed
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: $(BIN)/.installed
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/lint-imports

worker: $(BIN)/.installed
	$(BIN)/celery -A workbench worker -Q celery,reconcile,webhooks --loglevel=INFO

bench: $(BIN)/.installed
	for b in bench/bench_*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) var staticfiles
