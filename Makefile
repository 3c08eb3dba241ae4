# The two commands a new user needs: `make run` and `make test`.
GO       ?= go
BIN      ?= bin/spider
PYTHON   ?= python3
VENV     ?= .venv
FUZZTIME ?= 30s
BENCHTIME ?= 1s

.PHONY: all build run test  lint vet fmt bench fuzz race bound clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/spider

# A seeded game played by a random policy, rendered as a player sees it.
run:
	$(GO) run ./cmd/spider demo --seed 1 --suits 1

# Every test: lint first, then all Go tests (fuzz seeds and examples included).
test: lint
	$(GO) test -count=1 ./...

lint: vet
	@out=$$(gofmt -l .); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

fmt:
	gofmt -w .

# Speed and allocations of the hot paths (README's performance table).
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./env/

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzActions -fuzztime $(FUZZTIME) ./env/
	$(GO) test -run '^$$' -fuzz FuzzParseState -fuzztime $(FUZZTIME) ./env/
	$(GO) test -run '^$$' -fuzz FuzzParseAction -fuzztime $(FUZZTIME) ./env/

race:
	$(GO) test -race -short -count=1 ./...

# The face-up bound measurement quoted in the README (about an hour on 2 cores).
bound:
	$(GO) test -run FaceUpBound -v -timeout 3h -faceup.games=1000000 ./env/

clean:
	rm -rf bin $(VENV) python/build python/*.egg-info
