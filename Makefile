# Detector Mesh. `make demo` runs the mesh locally, `make test` runs every test.
# Both install what they need (virtualenv, jars) by themselves and are idempotent.

PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

export PYSPARK_PYTHON        := $(abspath $(BIN)/python)
export PYSPARK_DRIVER_PYTHON := $(abspath $(BIN)/python)

.DEFAULT_GOAL := help
.PHONY: help venv jars influxdb jaeger container-tools images lint typecheck compat test test-unit demo bench chaos soak equivalence down clean lock

help: ## List the targets
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-16s %s\n", $$1, $$2}'

# The compiled Avro decoder (Rust, native/avro_decoder): built into the venv when cargo is there;
# without cargo the mesh decodes with fastavro, 11x slower per record (shared/avro/compiled.py).
NATIVE := native/avro_decoder
NATIVE_SOURCES := $(wildcard $(NATIVE)/src/*.rs) $(NATIVE)/Cargo.toml $(NATIVE)/Cargo.lock $(NATIVE)/pyproject.toml

$(STAMP): requirements.lock pyproject.toml $(NATIVE_SOURCES)
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found: install Python 3.11 (or run make PYTHON=/path/to/python3.11)"; exit 1; }
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11)' 2>/dev/null || { echo "error: $(PYTHON) is not Python 3.11"; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet --upgrade pip || { echo "error: cannot reach PyPI to install pip: check the network or proxy"; exit 1; }
	@$(BIN)/python -m pip install --quiet -r requirements.lock || { echo "error: installing requirements.lock from PyPI failed (see above): check the network or proxy"; exit 1; }
	@$(BIN)/python -m pip install --quiet --no-deps -e . 2>/dev/null
	@if command -v cargo >/dev/null; then \
	  $(BIN)/python -m pip install --quiet ./$(NATIVE) || { echo "error: building the compiled Avro decoder ($(NATIVE)) failed (see above): it needs cargo and crates.io"; exit 1; }; \
	else echo "warning: cargo not found: the compiled Avro decoder is not built, records decode with fastavro (install Rust with rustup to build it)"; fi
	@touch $@
	@echo "virtualenv ready: $(VENV)"

venv: $(STAMP) ## Create the project virtualenv from requirements.lock

jars: $(STAMP) ## Fetch Kafka, Spark connector and Avro jars from Maven Central into .cache/jars
	@$(BIN)/python -m shared.jar_cache

influxdb: $(STAMP) ## Install InfluxDB from Debian's packages if missing (needs root)
	@$(BIN)/python -m hosting.servers.influx_install

jaeger: $(STAMP) ## Build the Jaeger v2 trace backend from the Go module proxy into ~/.cache/detector-mesh (once per user, ~8 min)
	@$(BIN)/python -m hosting.servers.jaeger_install

container-tools: $(STAMP) ## Install the Docker engine, docker-compose and debootstrap if missing (needs root)
	@$(BIN)/python -m hosting.containers.tools_install || echo "going on without them: the container tests will say why they cannot run"

images: jars jaeger ## Build the mesh's container images locally, no registry needed (base via debootstrap: root once)
	$(BIN)/python -m hosting.containers.images --rebuild

lint: $(STAMP) ## ruff lint and format check; the folders' import contracts (pyproject.toml)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: $(STAMP) ## mypy on the library and the control plane
	$(BIN)/mypy

compat: $(STAMP) ## Refuse schema versions that break backward or forward compatibility
	$(BIN)/python -m shared.avro.compatibility schemas

test: jars influxdb container-tools lint typecheck compat ## Run every test (unit, integration on real Kafka, Spark, InfluxDB; interop; the mesh in containers; Jaeger builds beside the first ones)
	$(BIN)/pytest

test-unit: $(STAMP) ## Only the fast tests that need no broker
	$(BIN)/pytest tests/unit

# A new seed per demo: a second demo on the same mesh gets new customers, so stateful detectors
# (new_country remembers countries) raise its planted alerts too.
DEMO_SEED := $(shell date +%s)

demo: jars ## Start the local mesh, produce sample records, show them routed, counted and alerted (with traces), then backtest a detector over the history
	@$(BIN)/python -m hosting.servers.influx_install || echo "going on without InfluxDB: metrics go to files under .mesh/metrics"
	@$(BIN)/python -m hosting.servers.jaeger_install || echo "going on without a trace backend"
	$(BIN)/mesh up
	@$(BIN)/python -m tools.ingest_wait --mark
	@# The records go out in the background while the progress line shows the mesh taking them.
	$(BIN)/mesh produce --count 20000 --rate 2000 --event-rate 2000 --customers 100000 --seed $(DEMO_SEED) --trace-planted --no-progress & producer=$$!; \
	$(BIN)/python -m tools.ingest_wait 20000; waited=$$?; wait $$producer && exit $$waited
	$(BIN)/mesh topics list
	$(BIN)/python -m tools.loadgen.score --seed $(DEMO_SEED)
	$(BIN)/python -m tools.notification_summary --seed $(DEMO_SEED)
	@# The batch half: the history job stores what the demo made (a batch a minute), then a
	@# backtest of velocity over it is compared with what the deployed velocity raised.
	$(BIN)/mesh history --wait 240
	$(BIN)/mesh backtest detectors/velocity --compare velocity
	$(BIN)/mesh status
	@# The demo's tail over time: its feed's warm-up and routing's hand-overs, per 5 s.
	$(BIN)/mesh status --latency --minutes 10
	@echo "the broker keeps running: inspect with '$(BIN)/mesh status', stop with 'make down'"

bench: jars ## Benchmarks against a baseline measured in the same run
	$(BIN)/python -m bench

chaos: jars ## The reliability suite: faults injected into a running mesh, one line of figures per case
	$(BIN)/python -m chaos

soak: jars ## One hour at 1 000 records/s on `mesh up --brokers 3`: memory, lag and raw -> alert p99 every 5 minutes; flat memory and lag, nothing lost (SOAK_ARGS="--minutes 10 --every 60" for a short one)
	$(BIN)/python -m chaos.soak $(SOAK_ARGS)

equivalence: jars ## Issue 31's check at full size: 100 000 records through ingest and the detectors, then each detector backtested over the stored history (same alert ids)
	MESH_DIAMOND_RECORDS=100000 $(BIN)/pytest tests/integration/test_diamond.py -p no:randomly

down: $(STAMP) ## Stop the local mesh
	$(BIN)/mesh down

lock: ## Re-pin requirements.lock from requirements.in
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/pip install --quiet -r requirements.in
	{ head -2 requirements.lock; .lock-venv/bin/pip freeze; } > requirements.lock.new
	mv requirements.lock.new requirements.lock && rm -rf .lock-venv

clean: ## Remove the virtualenv, caches and local mesh data (stop the mesh first)
	rm -rf $(VENV) .cache .mesh bench-results .pytest_cache .ruff_cache .mypy_cache $(NATIVE)/target
