# Lorry Controller: build, run, test.

GO      ?= go
BIN     := bin
PKGS    := ./...

.PHONY: all build run test bench check clean

all: build

build:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/lorry-controller-webapp ./cmd/webapp
	$(GO) build -o $(BIN)/lorry-controller-minion ./cmd/minion
	$(GO) build -o $(BIN)/lorry ./cmd/lorry

# Start a WEBAPP and two minions on the demo configuration, until Ctrl-C.
run: build
	./scripts/demo-run

# Every test, with the race detector; the scenario tests in yarns/ start
# the real binaries.
test: check
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

# Benchmarks print their figures; see docs/performance.md.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m $(PKGS)

check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

clean:
	rm -rf $(BIN)
