# railpath: `make run` sets up and runs the main job; `make test` sets up and runs every test.
CARGO ?= cargo
OUT ?= out
TARGET_DIR ?= $(or $(CARGO_TARGET_DIR),target)

.PHONY: setup run test build lint bench fuzz

setup:
	@./scripts/setup.sh

# The CLI's release build, optimised with a profile of the example scenarios (profile-guided
# optimisation; RAILPATH_PGO=0 for a plain `cargo build --release -p railpath-cli`).
build: setup
	CARGO="$(CARGO)" ./scripts/build-release.sh

# The main job: every example scenario, with its summary and time series under $(OUT)/.
run: build
	./scripts/run-main.sh $(OUT)

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	python3 scripts/layers.py
# The fuzz targets are their own workspace: check they still compile against the crates.
# LINT_FUZZ=0 leaves that to `make fuzz`, whose build compiles them (CI runs it right after
# `make test`: the check would take a minute for nothing).
	@if [ "$(LINT_FUZZ)" = 0 ]; then \
	  echo "lint: fuzz targets not checked (LINT_FUZZ=0: make fuzz builds them)"; \
	else \
	  echo "$(CARGO) check --quiet --manifest-path fuzz/Cargo.toml --bins"; \
	  $(CARGO) check --quiet --manifest-path fuzz/Cargo.toml --bins; \
	fi

test: setup lint
	CARGO="$(CARGO)" ./scripts/test.sh

# Simulator benchmarks: one JSON line per case (numbers in docs/performance.md).
bench: build
	$(TARGET_DIR)/release/railpath bench

# Every fuzz target for FUZZ_SECONDS each (default 30; see scripts/fuzz.sh). CI runs it after
# `make test`.
fuzz: setup
	CARGO="$(CARGO)" ./scripts/fuzz.sh
