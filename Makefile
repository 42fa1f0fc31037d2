# corral — run `make` for the list of targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS := -s -w -X github.com/corral-dev/corral/core/version.Version=$(VERSION) -X github.com/corral-dev/corral/core/version.Commit=$(COMMIT)
BIN     := bin/corral
PREFIX  ?= /usr/local
GO      ?= go

.PHONY: help build test test-e2e test-all lint vet shellcheck deptest darwin-check fuzz docs docs-check clean

help: ## show this help
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

build: ## build bin/corral
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/corral

test: ## unit and integration tests (no VMs)
	$(GO) test -count=1 ./...

test-e2e: build ## end-to-end tests on real Lima VMs (needs packaging/linux/test-deps.sh)
	packaging/ci/e2e.sh

test-all: lint test test-e2e ## everything CI runs

lint: vet shellcheck deptest darwin-check docs-check ## go vet, shellcheck, dependency test, darwin type check, docs drift

vet: ## go vet and gofmt
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

shellcheck: ## shellcheck every shell script
	shellcheck -x $$(git ls-files '*.sh' 2>/dev/null || find guest packaging -name '*.sh') .ci/run

deptest: ## core and the CLI must not import systray or darwinkit
	$(GO) test -count=1 -run TestDependencies ./cmd/corral/cli/

darwin-check: ## type-check all packages for darwin (arm64, amd64), with a must-fail self-test
	packaging/ci/darwin-check.sh

fuzz: ## run each fuzz target for 30s
	$(GO) test ./core/config -run XXX -fuzz FuzzProjectNeverWidens -fuzztime 30s

docs: ## regenerate docs/CONFIG.md and the man page
	$(GO) run ./cmd/gendocs

docs-check: ## fail when generated docs are stale
	$(GO) run ./cmd/gendocs -check

clean: ## remove build output
	rm -rf bin dist
