# Groundwork: `make run` serves the platform with sample data; `make test` runs the whole suite.
# Both create or update .venv from pyproject.toml first, so a fresh machine needs only Python 3.11 and pip.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: venv run dev serve serve-prod migrate seed test layers lint worker bench bench-scale clean-db help browser train-reader reader-carry reader-from-device reader-vendor

help:
	@echo "make run    - install, migrate, seed the demo tenant and sample data, serve http://$(HOST):$(PORT) (DEBUG off)"
	@echo "make dev    - the same with Django's debug pages on (DJANGO_DEBUG=1): for working on the code"
	@echo "make serve-prod - the production server (gunicorn, bounded connection pools) on http://$(HOST):$(PORT)"
	@echo "make test   - install, check the import layers, run the whole test suite"
	@echo "make layers - the import contracts (pyproject.toml [tool.importlinter]): apps import only apps below them"
	@echo "make worker - a Celery worker (needs CELERY_BROKER_URL)"
	@echo "make bench  - benchmarks into var/bench/"
	@echo "make bench-scale - retrieval speed at 1M chunks into var/bench/retrieval_scale.json (corpus built once, ~1 h on 2 cores, kept in var/bench-scale)"
	@echo "make lint   - ruff"
	@echo "make train-reader - fine-tune the reader on SQuAD train (both stages), export int8 ONNX, fit its threshold (hours on 2 cores)"
	@echo "make reader-carry / reader-from-device DEVICE_OUT=DIR - the same recipe in one call on a lent GPU (docs/answering.md)"

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	$(BIN)/python scripts/pgvector_portable.py
	@touch $(STAMP)

venv: $(STAMP)

migrate: venv
	$(BIN)/python manage.py migrate --noinput

# The seed's banner names the address `run` and `dev` serve (HOST, PORT), not a fixed one.
seed: migrate
	$(BIN)/python manage.py demo_seed --url http://$(HOST):$(PORT)

# DEBUG off unless DJANGO_DEBUG says otherwise: a 404 shows our page, not the URL patterns, and errors no traceback.
# Static files still come from the apps' folders (WhiteNoise with finders, settings). `make dev` is the debug server.
run: seed
	DJANGO_DEBUG=$${DJANGO_DEBUG:-0} $(BIN)/python manage.py runserver $(HOST):$(PORT)

dev: seed
	DJANGO_DEBUG=$${DJANGO_DEBUG:-1} $(BIN)/python manage.py runserver $(HOST):$(PORT)

serve: venv
	$(BIN)/python manage.py runserver $(HOST):$(PORT)

# The production way: gunicorn's threaded workers, one bounded connection pool per worker (settings, README
# "Running in production"). Static files are collected into var/static for the front proxy to serve. The server
# is DJANGO_ENV=production unless told otherwise (groundwork/gunicorn_config.py): DEBUG off, secure cookies, HTTPS
# redirect, and a secret key generated once into var/secret_key when DJANGO_SECRET_KEY is unset.
serve-prod: migrate
	$(BIN)/python manage.py collectstatic --noinput --verbosity 0
	WEB_BIND=$${WEB_BIND:-$(HOST):$(PORT)} $(BIN)/gunicorn -c python:groundwork.gunicorn_config

# The browser tests drive Debian's chromium + chromedriver: installed here when we may (root, apt), else those
# tests skip and say why.
browser:
	@if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then \
	  if [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null; \
	  else echo "browser tests will skip: install chromium and chromium-driver (Debian) to run them"; fi; \
	fi

# The import contracts first: a broken layer fails in a second, before a 12-minute suite (tests/test_layers.py
# checks them again, with what import-linter cannot see).
layers: venv
	$(BIN)/lint-imports --no-cache

# The suite runs on one pytest-xdist worker per core (PYTEST_WORKERS=0: in one process), then the `serial` tests
# alone (scripts/run_suite.py); PYTEST_ARGS go to both parts.
test: venv browser
	$(BIN)/lint-imports --no-cache
	$(BIN)/python scripts/with_redis.py $(BIN)/python scripts/run_suite.py $(PYTEST_ARGS)

lint: venv
	$(BIN)/ruff check .

# CELERY_WORKER_CONCURRENCY processes (default 2), counted in the database connection budget. Beat keeps its
# schedule in the database (django-celery-beat's DatabaseScheduler: CELERY_BEAT_SCHEDULER in settings), so it
# needs the migrated database, not a schedule file.
worker: migrate
	@test -n "$$CELERY_BROKER_URL" || { echo "set CELERY_BROKER_URL (e.g. redis://127.0.0.1:6379/0)"; exit 2; }
	$(BIN)/celery -A groundwork worker --beat --loglevel=INFO

bench: migrate
	$(BIN)/python manage.py bench_all --out var/bench --docs docs/benchmarks.md

# Retrieval speed at 1M chunks (benchmarks/knowledge/retrieval_scale.py) in an embedded database of its own under
# var/bench-scale: a synthetic corpus of one size removes any other, and `make bench` measures 100k in the main one.
# The first run loads and indexes the corpus (~1 h on 2 cores) and keeps it; later runs only measure. Then the page.
SCALE_VAR := $(CURDIR)/var/bench-scale
bench-scale: venv
	GROUNDWORK_VAR_DIR=$(SCALE_VAR) $(BIN)/python manage.py migrate --noinput
	GROUNDWORK_VAR_DIR=$(SCALE_VAR) $(BIN)/python manage.py bench_retrieval_scale --out var/bench
	$(BIN)/python manage.py shell -c "from pathlib import Path; from benchmarks import benchmarks_page_write; \
	  benchmarks_page_write(Path('var/bench'), Path('docs/benchmarks.md'))"

# The reader (chat/reader, opt-in: ANSWERABILITY_JUDGE=reader): fine-tuned from all-MiniLM-L6-v2 on SQuAD train
# (squad_train in the shared eval data) in its own venv with the `train` extra (torch, transformers: never in .venv),
# both stages of the recipe (training.reader.device.STAGES), each resumable from its checkpoint under
# var/reader-train; then exported to int8 ONNX in chat/reader/data/ and its calibration and threshold fitted on
# SQuAD 2.0 dev's even articles. On 2 cores the whole recipe takes many hours: train on a GPU instead
# (reader-carry, then reader-from-device; docs/answering.md, "Training the reader on a GPU").
TRAIN_VENV := .venv-train
# torch first, pinned: our machines hold this CPU build on disk and pip takes it from there; an unpinned `torch`
# (what the extra asks for) would fetch a CUDA build of several GB. Override it on a GPU machine.
TORCH ?= torch==2.13.0
$(TRAIN_VENV)/.installed: pyproject.toml
	@test -x $(TRAIN_VENV)/bin/python || $(PYTHON) -m venv $(TRAIN_VENV)
	$(TRAIN_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(TRAIN_VENV)/bin/python -m pip install --quiet '$(TORCH)'
	$(TRAIN_VENV)/bin/python -m pip install --quiet -e '.[train]'
	@touch $@

train-reader: venv $(TRAIN_VENV)/.installed
	PYTHONPATH=. $(TRAIN_VENV)/bin/python -m training.reader.device local --work var/reader-train
	$(MAKE) reader-vendor

# The files a GPU machine needs to run the recipe in one call (the checked base weights as fp16, the training data),
# into var/reader-carry: about 51 MiB, carried beside the repository.
reader-carry: $(TRAIN_VENV)/.installed
	PYTHONPATH=. $(TRAIN_VENV)/bin/python -m training.reader.device pack --carry var/reader-carry

# What the GPU call returned (DEVICE_OUT: the folder its files came back into) into the vendored reader.
reader-from-device: venv $(TRAIN_VENV)/.installed
	@test -n "$(DEVICE_OUT)" || { echo "set DEVICE_OUT to the folder the device's files came back into"; exit 2; }
	PYTHONPATH=. $(TRAIN_VENV)/bin/python -m training.reader.device unpack --from $(DEVICE_OUT) --work var/reader-train
	$(MAKE) reader-vendor

reader-vendor: venv $(TRAIN_VENV)/.installed
	PYTHONPATH=. $(TRAIN_VENV)/bin/python -m training.reader.export --work var/reader-train
	$(BIN)/python manage.py fit_reader --write
	PYTHONPATH=. $(TRAIN_VENV)/bin/python -m training.reader.card
