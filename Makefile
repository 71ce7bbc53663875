# LaughLab: `make demo` runs the platform with the demo study; `make test` runs every test.
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8000
export OMP_NUM_THREADS ?= 1

.PHONY: demo test lint typecheck check install clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet ".[dev]"
	touch $@

install: $(VENV)/.installed

# SQLite and kombu's filesystem broker: no services needed.
demo: export DEBUG ?= 1
demo: $(VENV)/.installed
	$(PY) manage.py migrate --noinput
	$(PY) manage.py seed_demo
	$(PY) manage.py rundemo --port $(PORT)

test: $(VENV)/.installed
	$(PY) -m pytest $(PYTEST_ARGS)

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(VENV)/.installed
	DEBUG=1 $(VENV)/bin/mypy

check: lint typecheck
	DEBUG=1 $(PY) manage.py makemigrations --check --dry-run

clean:
	rm -rf var/broker var/laughlab.sqlite3* var/static
