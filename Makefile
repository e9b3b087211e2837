# Thin aliases for go commands.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: build test check bench fuzz clean

build:
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o agentmail .

test:
	go test -race -count=1 ./...

check:
	test -z "$$(gofmt -l . | grep -v '^testdata/')"
	go vet ./...
	go mod tidy -diff
	go test -race -count=1 ./...

bench:
	go test -run='^$$' -bench=. -benchmem ./...

fuzz:
	go test -run='^$$' -fuzz=FuzzReader -fuzztime=30s ./jsonrpc/
	go test -run='^$$' -fuzz=FuzzDecode -fuzztime=30s ./jsonrpc/
	go test -run='^$$' -fuzz=FuzzParseLine -fuzztime=30s ./mailbox/

clean:
	rm -f agentmail
