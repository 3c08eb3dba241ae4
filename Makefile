# The two commands a new user needs: `make run` and `make test`.
GO       ?= go
BIN      ?= bin/spider
PYTHON   ?= python3
VENV     ?= .venv
FUZZTIME ?= 30s
BENCHTIME ?= 1s
# OpenBLAS when it links (Debian: libopenblas-dev; `make openblas` installs
# it): the trainer's multiplies run about ten times faster. Without it
# everything builds and runs in pure Go; `make test` tests both builds.
CC       ?= cc
TAGS     ?= $(shell printf 'int main(void){return 0;}' | $(CC) -x c - -lopenblas -o /dev/null 2>/dev/null && echo openblas)
GOTAGS   := -tags '$(TAGS)'

.PHONY: all build run test pytest pylint lint vet fmt bench pybench fuzz race bound soak clean openblas test-integrations test-oldest test-ports results results-eval

all: build

# -buildvcs=auto: stamp the commit even where GOFLAGS turns stamping off,
# since eval reports and results tables name the program that made them.
build:
	$(GO) build -buildvcs=auto $(GOTAGS) -o $(BIN) ./cmd/spider

# A seeded game played by a random policy, rendered as a player sees it.
run:
	$(GO) run ./cmd/spider demo --seed 1 --suits 1

# Every test: lint, all Go tests (fuzz seeds and examples included), the
# concurrent packages again under the race detector, then the Python
# client's tests against the real server binary.
test: lint
	@echo "BLAS: $(if $(TAGS),OpenBLAS,pure Go (no libopenblas; see make openblas))"
	$(GO) test $(GOTAGS) -count=1 ./...
	$(if $(TAGS),$(GO) test -count=1 ./agents/nn/ ./train/)
	$(GO) test -race -short -count=1 ./env/ ./server/ ./agents/remote/
	$(MAKE) pytest

# The Python client: a virtual environment in .venv with the package and
# its test and lint dependencies, then its lint and pytest against bin/spider.
$(VENV)/.installed: python/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet './python[test,lint]'
	touch $@

pytest: pylint build
	SPIDER_BIN=$(abspath $(BIN)) $(VENV)/bin/pip install --quiet --no-deps --force-reinstall ./python
	SPIDER_BIN=$(abspath $(BIN)) $(VENV)/bin/python -m pytest python/tests -q

# The integrations (Stable-Baselines3, sb3-contrib, RLlib, Gymnasium's
# wrappers): python/tests_integrations in a virtual environment of its own,
# .venv-integrations, with torch (from PyPI by default; where
# download.pytorch.org is reachable, TORCH_INDEX=https://download.pytorch.org/whl/cpu
# fetches the much smaller CPU-only wheels), sb3-contrib and ray[rllib]: a
# large download, done once. A few minutes on 2 cores.
INTEG_VENV  ?= .venv-integrations
TORCH_INDEX ?=

$(INTEG_VENV)/.installed: python/pyproject.toml
	test -x $(INTEG_VENV)/bin/python || $(PYTHON) -m venv $(INTEG_VENV)
	$(INTEG_VENV)/bin/pip install --quiet --upgrade pip
	$(INTEG_VENV)/bin/pip install --quiet $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) torch
	SPIDER_BIN=$(abspath $(BIN)) $(INTEG_VENV)/bin/pip install --quiet './python[test,sb3,rllib]' moviepy
	touch $@

test-integrations: build test-oldest test-ports
	$(MAKE) $(INTEG_VENV)/.installed
	SPIDER_BIN=$(abspath $(BIN)) $(INTEG_VENV)/bin/pip install --quiet --no-deps --force-reinstall ./python
	SPIDER_BIN=$(abspath $(BIN)) $(INTEG_VENV)/bin/python -m pytest python/tests_integrations -q

# The client's tests against the oldest numpy, msgpack and Gymnasium that
# python/pyproject.toml allows (python/oldest.py reads the pins from it), in
# .venv-oldest: the lower bounds users are promised are tested ones. Run by
# test-integrations.
OLDEST_VENV ?= .venv-oldest

$(OLDEST_VENV)/.installed: python/pyproject.toml python/oldest.py
	test -x $(OLDEST_VENV)/bin/python || $(PYTHON) -m venv $(OLDEST_VENV)
	$(OLDEST_VENV)/bin/pip install --quiet --upgrade pip
	$(PYTHON) python/oldest.py > $(OLDEST_VENV)/oldest.txt
	$(OLDEST_VENV)/bin/pip install --quiet --only-binary=:all: -r $(OLDEST_VENV)/oldest.txt pytest
	touch $@

test-oldest: build
	$(MAKE) $(OLDEST_VENV)/.installed
	$(OLDEST_VENV)/bin/pip install --quiet --no-deps --force-reinstall ./python
	$(OLDEST_VENV)/bin/python -c 'import gymnasium, msgpack, numpy; print("oldest allowed:", "numpy", numpy.__version__, "msgpack", ".".join(map(str, msgpack.version)), "gymnasium", gymnasium.__version__)'
	SPIDER_BIN=$(abspath $(BIN)) $(OLDEST_VENV)/bin/python -m pytest python/tests -q -p no:cacheprovider

# The Python sources: ruff's lint and format check, and mypy (strict) on the
# package and bench.py; all configured in python/pyproject.toml.
pylint: $(VENV)/.installed
	cd python && $(abspath $(VENV))/bin/ruff check --no-cache . && $(abspath $(VENV))/bin/ruff format --no-cache --check .
	cd python && $(abspath $(VENV))/bin/mypy

# Debian's OpenBLAS, where this user may install packages.
openblas:
	apt-get install -y libopenblas-dev || (apt-get update && apt-get install -y libopenblas-dev)

lint: vet
	@out=$$(gofmt -l .); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# vet also type-checks every package and test for 32-bit ints (GOARCH=386),
# where a constant over 2^31 that fits an int here stops the build.
vet:
	$(GO) vet ./...
	$(if $(TAGS),$(GO) vet $(GOTAGS) ./agents/nn/ ./train/)
	GOARCH=386 $(GO) vet ./...

# Other platforms: go vet (tests included) for Windows and macOS, the Go
# tests (-short) built for 32-bit ints where the kernel runs 386 binaries,
# then the Python client's tests against a 386 bin/spider-386 (about 3
# minutes on 2 cores). Run by test-integrations.
test-ports: $(VENV)/.installed
	GOOS=windows $(GO) vet ./...
	GOOS=darwin $(GO) vet ./...
	GOARCH=386 $(GO) test -short -count=1 ./...
	GOARCH=386 $(GO) build -buildvcs=auto -o bin/spider-386 ./cmd/spider
	$(VENV)/bin/pip install --quiet --no-deps --force-reinstall ./python
	SPIDER_BIN=$(abspath bin/spider-386) $(VENV)/bin/python -m pytest python/tests -q -p no:cacheprovider

fmt:
	gofmt -w .

# Speed and allocations of the hot paths (docs/performance.md).
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./env/
	$(GO) test $(GOTAGS) -run '^$$' -bench LearnerUpdate -benchmem -benchtime 20x ./train/

# The Python loop against the in-process Go batch (docs/performance.md).
pybench: build $(VENV)/.installed
	SPIDER_BIN=$(abspath $(BIN)) $(VENV)/bin/python python/bench.py

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzActions -fuzztime $(FUZZTIME) ./env/
	$(GO) test -run '^$$' -fuzz FuzzParseState -fuzztime $(FUZZTIME) ./env/
	$(GO) test -run '^$$' -fuzz FuzzParseAction -fuzztime $(FUZZTIME) ./env/
	$(GO) test -run '^$$' -fuzz FuzzDecodeRequest -fuzztime $(FUZZTIME) ./server/
	$(GO) test -run '^$$' -fuzz FuzzServe -fuzztime $(FUZZTIME) ./server/
	$(GO) test -run '^$$' -fuzz FuzzReadCheckpoint -fuzztime $(FUZZTIME) -fuzzminimizetime 2s ./agents/nn/
	$(GO) test -run '^$$' -fuzz FuzzReadRecord -fuzztime $(FUZZTIME) -fuzzminimizetime 2s ./record/
	$(GO) test -run '^$$' -fuzz FuzzParseEvalReport -fuzztime $(FUZZTIME) -fuzzminimizetime 2s ./internal/cli/
	$(GO) test -run '^$$' -fuzz FuzzEachKey -fuzztime $(FUZZTIME) -fuzzminimizetime 2s ./internal/cli/
	$(GO) test -run '^$$' -fuzz FuzzResume -fuzztime $(FUZZTIME) -fuzzminimizetime 2s ./train/
	$(GO) test -run '^$$' -fuzz FuzzDecodeReply -fuzztime $(FUZZTIME) -fuzzminimizetime 2s ./agents/remote/

# The server under the worst load its limits admit (largest batches,
# pictures, oversize frames from many clients, on loopback, about 20 s):
# fails if peak RSS passes --max-memory plus the stated constant.
soak:
	$(GO) test -count=1 -run TestServerRSSWithinMaxMemory -v ./server/

race:
	$(GO) test -race -short -count=1 ./...

# The results table of docs/results.md, generated from the eval reports in
# docs/results/ (spider eval --suite NAME --json): `make results` rewrites
# the section between its markers from whatever reports are there.
# `make results-eval` first plays RESULTS_POLICIES on RESULTS_SUITES (every
# test suite by default) into docs/results/SUITE-RESULTS_NAME.json, e.g.
#   make results-eval RESULTS_POLICIES=search RESULTS_NAME=search RESULTS_SUITES=classic-1suit-test
RESULTS_SUITES   ?= classic-1suit-test classic-2suit-test classic-4suit-test cardems-1suit-test
RESULTS_POLICIES ?= random,greedy
RESULTS_NAME     ?= baselines
RESULTS_FLAGS    ?=

results: build
	$(BIN) results --update docs/results.md docs/results/*.json

results-eval: build
	mkdir -p docs/results
	for s in $(RESULTS_SUITES); do \
		$(BIN) eval --suite $$s --policies $(RESULTS_POLICIES) $(RESULTS_FLAGS) --json > docs/results/.$$s-$(RESULTS_NAME).json.tmp && \
		mv docs/results/.$$s-$(RESULTS_NAME).json.tmp docs/results/$$s-$(RESULTS_NAME).json || { rm -f docs/results/.$$s-$(RESULTS_NAME).json.tmp; exit 1; }; \
	done
	$(MAKE) results

# The face-up bound measurement quoted in RULES.md (about an hour on 2 cores).
bound:
	$(GO) test -run FaceUpBound -v -timeout 3h -faceup.games=1000000 ./env/

clean:
	rm -rf bin $(VENV) $(OLDEST_VENV) python/build python/*.egg-info python/.mypy_cache python/.ruff_cache
