# Thin aliases for go commands.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)

BENCH_BIN ?= /tmp/agentmail-bench/agentmail
# COMPARE=/path/to/another/agentmail makes bench measure it beside this one.
COMPARE ?=

.PHONY: build test check bench fuzz interop registry clean

build:
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o agentmail .

# The race detector sleeps a second at every process exit by default; the
# end-to-end scripts start hundreds of processes. The memory budget of
# SC-005 holds for the real binary, not a -race one, so its script runs
# once more without the race detector.
test:
	GORACE=atexit_sleep_ms=0 go test -race -count=1 ./...
	go test -count=1 -run 'TestScript/req_sc005' .

# make test, then the format, vet and module checks.
check: test
	test -z "$$(gofmt -l . | grep -v '^testdata/')"
	go vet ./...
	go mod tidy -diff
	cd interop && go vet ./... && go mod tidy -diff

bench:
	go test -run='^$$' -bench=. -benchmem ./...
	CGO_ENABLED=0 go build -trimpath -o $(BENCH_BIN) .
	go run ./bench/mailbox -bin $(BENCH_BIN)
	CGO_ENABLED=0 go run ./bench/mcp -bin $(BENCH_BIN) $(if $(COMPARE),-compare $(COMPARE))
	CGO_ENABLED=0 go run ./bench/http -bin $(BENCH_BIN)
	go run ./bench/web -bin $(BENCH_BIN)

# Clients written elsewhere drive the built binary: the official Go SDK at
# four protocol revisions, over stdio, Streamable HTTP and HTTP+SSE; the
# MCP Inspector CLI over stdio and HTTP (needs node and jq); the official
# TypeScript SDK client, pinned in interop/ts (needs node); the official
# conformance suite over HTTP, pinned with the Node 22 it needs in
# interop/conformance (needs npm); and headless Chromium on the web page
# (interop/browser_test.go, needs chromium; screenshots go to
# $AGENTMAIL_SCREENSHOTS or interop/screenshots).
interop: build
	cd interop && go vet ./... && AGENTMAIL_BIN=$(CURDIR)/agentmail go test -count=1 ./...
	AGENTMAIL_BIN=$(CURDIR)/agentmail bash interop/inspector.sh
	cd interop/ts && npm ci --no-audit --no-fund
	AGENTMAIL_BIN=$(CURDIR)/agentmail node interop/ts/oversize.mjs
	AGENTMAIL_BIN=$(CURDIR)/agentmail node interop/ts/wait-reply.mjs
	AGENTMAIL_BIN=$(CURDIR)/agentmail node interop/ts/http.mjs
	AGENTMAIL_BIN=$(CURDIR)/agentmail bash interop/conformance.sh

# Rewrites server.json, smithery.yaml, mcp-get.json and glama.json from
# the MCP server's own listing (make test fails when they drift), then
# validates server.json against the registry's schema. At a release,
# MCPB=path/to/agentmail.mcpb records the bundle's SHA-256 (docs/install.md).
registry:
	go test -count=1 -run '^TestRegistryFiles$$' . -args -update-registry $(if $(MCPB),-mcpb $(abspath $(MCPB)))
	go test -count=1 -run '^TestServerJSONSchema$$' .

fuzz:
	go test -run='^$$' -fuzz=FuzzReader -fuzztime=30s ./jsonrpc/
	go test -run='^$$' -fuzz=FuzzIDScanner -fuzztime=30s ./jsonrpc/
	go test -run='^$$' -fuzz=FuzzDecode -fuzztime=30s ./jsonrpc/
	go test -run='^$$' -fuzz=FuzzServe -fuzztime=30s ./jsonrpc/
	go test -run='^$$' -fuzz=FuzzParseLine -fuzztime=30s ./mailbox/
	go test -run='^$$' -fuzz=FuzzReceive -fuzztime=30s ./mailbox/
	go test -run='^$$' -fuzz=FuzzParseState -fuzztime=30s ./mailbox/
	go test -run='^$$' -fuzz=FuzzLoneSurrogate -fuzztime=30s ./jsonrpc/

clean:
	rm -f agentmail
