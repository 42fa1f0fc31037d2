# corral — run `make` for the list of targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS := -s -w -X github.com/corral-dev/corral/core/version.Version=$(VERSION) -X github.com/corral-dev/corral/core/version.Commit=$(COMMIT)
BIN     := bin/corral
# The small program qemu runs per guest connection (core/guestconn); corral
# looks for it in its own directory, so it is built and installed beside it.
GUEST_BIN ?= $(dir $(BIN))corral-guest-conn
PREFIX  ?= /usr/local
GO      ?= go

.PHONY: help build test test-race test-e2e test-e2e-lima bench-e2e test-all lint vet shellcheck shfmt deptest darwin-check fuzz fuzz-short docs docs-check clean

help: ## show this help
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

build: ## build bin/corral and bin/corral-guest-conn
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/corral
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $(GUEST_BIN) ./cmd/corral-guest-conn

test: ## unit and integration tests (no VMs)
	$(GO) test -count=1 ./...

# In test-all it runs in test-e2e's second lane (E2E_ALONGSIDE), after the
# smoke run: the suite keeps one core busy with one TCG VM for most of an
# hour, so the race run costs no wall time there; nice keeps the suite's VM
# ahead of it. All packages: about 4 CPU-minutes (docs/BENCHMARKS.md).
test-race: ## unit tests with the race detector, every package
	$(GO) test -race -count=1 ./...

# The whole suite runs against Lima 2.2.0 (what Homebrew gives Mac users), a
# smoke run against Lima 1.2.2 (the declared minimum): render + validate, a
# box from a golden clone, run, ls, rm (one boot). Each run builds
# its own golden image: Lima 2.1 renamed the instance's disk files, so an
# instance made by one version is not handed to the other. The smoke run
# goes alongside the suite (its own namespace, home and VM; most of the
# suite's time is one TCG VM on one core, so the second core does it),
# followed in that second lane by core/lima's e2e test (the Lima client on
# 1.2.2, whose output its testdata records; one boot) and the make targets
# of E2E_ALONGSIDE (test-all: test-race fuzz-short), niced. The second lane's output
# is printed after the suite's.
#
# E2E_SUITE and E2E_SIDE split the Lima 2.2.0 suite between the lanes: the
# first lane runs the tests E2E_SUITE matches, the second lane those
# E2E_SIDE matches (after its Lima 1.2.2 runs). test-all gives the second
# lane TestClaudeBrokered, which needs no golden image (golden = false)
# and is a third of the suite's time; packaging's TestE2ELanesCoverTheSuite
# fails when a top-level e2e test is in neither lane or in both.
LIMA2_PREFIX ?= /usr/local/lib/lima-2.2.0
E2E_SMOKE    ?= ^(TestRenderValidates|TestBoxLifecycle)$$/^(up_from_a_golden_clone|run_reads_the_project_mount|run_writes_back_to_the_host|ls_shows_it_running_with_host_memory|rm_leaves_nothing_behind)$$
E2E_SUITE    ?= .
E2E_SIDE     ?=
E2E_ALONGSIDE ?=

test-e2e: build ## end-to-end tests on real Lima VMs: all on Lima 2.2.0; alongside, a smoke run and core/lima's e2e on 1.2.2 (needs packaging/linux/test-deps.sh)
	@side=$$(mktemp /tmp/corral-e2e-side.XXXXXX); \
	{ CORRAL_E2E_CLIENT=1 CORRAL_E2E_RUN='$(E2E_SMOKE)' packaging/ci/e2e.sh; s=$$?; \
	  if [ -n '$(E2E_SIDE)' ]; then \
	    echo "=== the Lima 2.2.0 suite's second-lane tests: $(E2E_SIDE) ==="; \
	    CORRAL_E2E_LIMA='$(LIMA2_PREFIX)' CORRAL_E2E_RUN='$(E2E_SIDE)' packaging/ci/e2e.sh || s=1; \
	  fi; \
	  for t in $(E2E_ALONGSIDE); do \
	    echo "=== make $$t (alongside the suite) ==="; start=$$(date +%s); \
	    nice -n 10 $(MAKE) --no-print-directory $$t || s=1; \
	    echo "=== make $$t: $$(( $$(date +%s) - start )) s ==="; \
	  done; exit $$s; } >"$$side" 2>&1 & spid=$$!; \
	CORRAL_E2E_LIMA='$(LIMA2_PREFIX)' CORRAL_E2E_RUN='$(E2E_SUITE)' packaging/ci/e2e.sh; rc=$$?; \
	wait $$spid; src=$$?; \
	echo "=== the second lane (alongside the suite): Lima 1.2.2 smoke run, core/lima e2e, $(E2E_SIDE) $(E2E_ALONGSIDE): exit $$src ==="; \
	cat "$$side"; rm -f "$$side"; \
	[ $$rc -eq 0 ] && [ $$src -eq 0 ]

test-e2e-lima: ## core/lima's e2e test alone (the Lima client on a real VM; CORRAL_E2E_LIMA=PREFIX for another limactl)
	CORRAL_E2E_CLIENT=1 CORRAL_E2E_RUN='^$$' packaging/ci/e2e.sh

bench-e2e: build ## the e2e measurements (session overhead, claude first answer byte) on Lima 2.2.0; tables in docs/BENCHMARKS.md
	CORRAL_E2E_BENCH=1 CORRAL_E2E_LIMA='$(LIMA2_PREFIX)' CORRAL_E2E_RUN='^(TestBoxLifecycle|TestClaudeBrokered)$$/^(up_from_a_golden_clone|benchmark.*|claude_-p_answers.*|time_to_the_first_answer_byte)$$' packaging/ci/e2e.sh

# After packaging/linux/test-deps.sh the desktop stack (D-Bus, keyring,
# notification daemon, Xvfb) is installed, so its tests must run, not skip.
test-all: export CORRAL_REQUIRE_DESKTOP := 1
# ... and sshd (openssh-server), so the remote-host test over a real sshd on
# 127.0.0.1 (cmd/corral TestRemoteHostOverRealSSHD) must run, not skip.
test-all: export CORRAL_REQUIRE_SSHD := 1
# lint, test-race (every unit test, with the race detector: the same tests
# as `make test`, so that is not run twice) and fuzz-short run in
# test-e2e's second lane, alongside the suite: CPU-minutes that cost no
# wall time there. The suite's first lane starts as soon as the binary is
# built.
test-all: E2E_ALONGSIDE := lint test-race fuzz-short
test-all: E2E_SUITE := ^(TestAgentCLIsThroughBroker|TestDiagnosticsReport|TestRenderValidates|TestBoxLifecycle|TestHostFunnel|TestPullCloneAndAgentState)$$
test-all: E2E_SIDE := ^TestClaudeBrokered$$
test-all: test-e2e ## everything CI runs: the e2e suite in two lanes, lint, the unit tests with -race and fuzz-short alongside it

lint: vet shellcheck shfmt deptest darwin-check docs-check ## go vet, shellcheck, shfmt, dependency test, darwin type check, docs drift

vet: ## go vet and gofmt
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

shellcheck: ## shellcheck every shell script
	shellcheck -x $$(git ls-files '*.sh' 2>/dev/null || find guest packaging -name '*.sh') .ci/run

shfmt: ## shfmt -d (tabs, the default style) on every shell script
	shfmt -d $$(git ls-files '*.sh' 2>/dev/null || find guest packaging -name '*.sh') .ci/run

deptest: ## the layering test (each floor imports only its own and lower floors), ARCHITECTURE.md names every package, no systray or darwinkit in core and the CLI, the darwin binary only darwinkit/objc and dispatch
	$(GO) test -count=1 -run 'TestDependencies|TestLayers|TestArchitecture' ./cmd/corral/

darwin-check: ## type-check all packages for darwin (arm64, amd64), with a must-fail self-test
	packaging/ci/darwin-check.sh

fuzz: ## run every fuzz target in the repo for 30s each (FUZZTIME=2m to change)
	GO='$(GO)' FUZZTIME='$(or $(FUZZTIME),30s)' packaging/ci/fuzz.sh

fuzz-short: ## run every fuzz target for 3s each (CI)
	GO='$(GO)' FUZZTIME=3s packaging/ci/fuzz.sh

docs: ## regenerate docs/CONFIG.md and the man page
	$(GO) run ./cmd/gendocs

docs-check: ## fail when generated docs are stale
	$(GO) run ./cmd/gendocs -check

clean: ## remove build output
	rm -rf bin dist

# --- packaging (owned by packaging) ---
# make install PREFIX=/usr/local DESTDIR=   (Debian packages use PREFIX=/usr; make deb does that)
# The autostart entry goes to $(SYSCONFDIR)/xdg/autostart whatever PREFIX is: that is where
# desktops look. The zsh directory is the one Debian's zsh searches for PREFIX=/usr.
DESTDIR     ?=
SYSCONFDIR  ?= /etc
DIST        ?= dist
ZSH_COMPDIR ?= $(if $(filter /usr,$(PREFIX)),$(PREFIX)/share/zsh/vendor-completions,$(PREFIX)/share/zsh/site-functions)
MAN_PAGES   := $(wildcard docs/man/*.1)
INSTALLED   := $(PREFIX)/bin/corral \
	$(PREFIX)/bin/corral-guest-conn \
	$(PREFIX)/share/bash-completion/completions/corral \
	$(ZSH_COMPDIR)/_corral \
	$(PREFIX)/share/fish/vendor_completions.d/corral.fish \
	$(PREFIX)/share/applications/corral.desktop \
	$(PREFIX)/share/icons/hicolor/256x256/apps/corral.png \
	$(SYSCONFDIR)/xdg/autostart/corral.desktop

.PHONY: app dmg release-mac install uninstall deb

app: ## build dist/Corral.app, universal, signed (macOS only; CORRAL_SIGN_IDENTITY for Developer ID)
	VERSION='$(VERSION)' COMMIT='$(COMMIT)' GO_LDFLAGS='$(LDFLAGS)' DIST='$(DIST)' GO='$(GO)' packaging/macos/build-app.sh

dmg: app ## pack dist/Corral.app into dist/Corral-<version>.dmg (macOS only)
	DIST='$(DIST)' packaging/macos/make-dmg.sh

# The app is notarized and stapled before it goes into the image, so that a
# Corral.app copied out of the DMG passes Gatekeeper offline too; then the
# image itself is notarized and stapled (the cask downloads it).
release-mac: app ## Developer ID build: notarize+staple Corral.app, then the DMG (macOS; CORRAL_SIGN_IDENTITY, CORRAL_NOTARY_PROFILE)
	DIST='$(DIST)' packaging/macos/notarize.sh '$(DIST)/Corral.app'
	DIST='$(DIST)' packaging/macos/make-dmg.sh
	DIST='$(DIST)' packaging/macos/notarize.sh

install: build ## install corral, completions, man pages and desktop entries into DESTDIR/PREFIX
	install -d '$(DESTDIR)$(PREFIX)/bin' '$(DESTDIR)$(PREFIX)/share/bash-completion/completions' \
	  '$(DESTDIR)$(ZSH_COMPDIR)' '$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d' \
	  '$(DESTDIR)$(PREFIX)/share/man/man1' '$(DESTDIR)$(PREFIX)/share/applications' \
	  '$(DESTDIR)$(PREFIX)/share/icons/hicolor/256x256/apps' '$(DESTDIR)$(SYSCONFDIR)/xdg/autostart'
	install -m 0755 '$(BIN)' '$(DESTDIR)$(PREFIX)/bin/corral'
	install -m 0755 '$(GUEST_BIN)' '$(DESTDIR)$(PREFIX)/bin/corral-guest-conn'
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	  '$(BIN)' completion bash >"$$tmp/bash"; '$(BIN)' completion zsh >"$$tmp/zsh"; '$(BIN)' completion fish >"$$tmp/fish"; \
	  install -m 0644 "$$tmp/bash" '$(DESTDIR)$(PREFIX)/share/bash-completion/completions/corral'; \
	  install -m 0644 "$$tmp/zsh" '$(DESTDIR)$(ZSH_COMPDIR)/_corral'; \
	  install -m 0644 "$$tmp/fish" '$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/corral.fish'
	install -m 0644 $(MAN_PAGES) '$(DESTDIR)$(PREFIX)/share/man/man1/'
	install -m 0644 packaging/linux/corral.desktop '$(DESTDIR)$(PREFIX)/share/applications/corral.desktop'
	install -m 0644 assets/icon-256.png '$(DESTDIR)$(PREFIX)/share/icons/hicolor/256x256/apps/corral.png'
	install -m 0644 packaging/linux/corral-autostart.desktop '$(DESTDIR)$(SYSCONFDIR)/xdg/autostart/corral.desktop'

uninstall: ## remove what make install installed (same PREFIX and DESTDIR)
	rm -f $(addprefix '$(DESTDIR),$(addsuffix ',$(INSTALLED)))
	rm -f '$(DESTDIR)$(PREFIX)/share/man/man1/'corral.1 '$(DESTDIR)$(PREFIX)/share/man/man1/'corral-*.1

deb: ## build dist/corral_<version>_amd64.deb from make install (needs dpkg-deb)
	VERSION='$(VERSION)' COMMIT='$(COMMIT)' DIST='$(DIST)' MAKE='$(MAKE)' packaging/deb/build-deb.sh
