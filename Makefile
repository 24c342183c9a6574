# Lorry Controller: build, run, test.

GO      ?= go
BIN     := bin
PKGS    := ./...
# The packages whose tests run again on PostgreSQL (statedb/dbtest): a
# private throwaway cluster, or LORRY_CONTROLLER_TEST_POSTGRES. The yarns
# scenarios run again there too, each WEBAPP on a database of its own.
PGPKGS  := ./statedb/... ./control/ ./routes/... ./cmd/webapp/ ./periodic/ ./systemd/ ./webhook/
# The tests of yarns/ whose WEBAPPs use the backend under test; the others
# that open a store run on both backends, or on PostgreSQL, every time.
PGYARNS := ^(TestScenarios|TestGeneratedClient|TestReportsSafeToRepeat|TestScraperStress)$$
# The packages, and the yarns scenarios, whose PostgreSQL pass runs once
# more through a pgbouncer in transaction mode that the tests start in
# front of the same server (docs/operations.md, "Behind pgbouncer").
PGBPKGS := ./statedb/... ./control/
PGB     := LORRY_CONTROLLER_TEST_STATEDB=postgres LORRY_CONTROLLER_TEST_PGBOUNCER=1
# How many packages' tests run at once. Most of their time they wait, on
# the processes, servers and databases they start: twice the cores keeps
# a small machine's cores busy; from 8 on, go test's own default (one a
# core) does.
TESTP   ?= $(shell n=$$(nproc 2>/dev/null || echo 2); echo $$(( n * 2 < 8 ? n * 2 : (n > 8 ? n : 8) )))

# Where make install puts things. DESTDIR goes in front of every path, for
# staged installs and packages; the installed files name the paths without
# it.
PREFIX      ?= /usr/local
BINDIR      ?= $(PREFIX)/bin
SYSCONFDIR  ?= /etc
DATADIR     ?= $(PREFIX)/share
DOCDIR      ?= $(DATADIR)/doc/lorry-controller
HOOKDIR     ?= $(DATADIR)/lorry-controller/hooks
SYSTEMDDIR  ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
INSTALL     ?= install

PROGRAMS := lorry-controller-webapp lorry-controller-minion lorry
UNITS    := $(notdir $(wildcard units/*.service units/*.socket units/*.timer units/*.target))
CONFIGS  := webapp.conf minion.conf
# The alerting rules with their tests, and the dashboard: examples for
# Prometheus and Grafana, installed under DOCDIR (docs/operations.md,
# "Alerts").
ALERTS   := prometheus/lorry-controller-rules.yml prometheus/lorry-controller-rules.test.yml grafana/lorry-controller.json
SUBST    := sed -e 's|@bindir@|$(BINDIR)|g' -e 's|@sysconfdir@|$(SYSCONFDIR)|g' -e 's|@docdir@|$(DOCDIR)|g'

.PHONY: all build run deps test test-install faults bench bench-sim fuzz screenshots check clean install uninstall

all: build

build:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/lorry-controller-webapp ./cmd/webapp
	$(GO) build -o $(BIN)/lorry-controller-minion ./cmd/minion
	$(GO) build -o $(BIN)/lorry ./cmd/lorry

# Start a WEBAPP and two minions on the demo configuration, until Ctrl-C
# or a SIGINT or SIGTERM to make (DEMO=DIR keeps its state elsewhere than
# demo/).
run: build
	./scripts/demo-run

# What the tests need beyond Go and git (converters, Chromium, curl,
# systemd-analyze): as root on Debian it installs what is missing, otherwise
# it names the apt-get line and stops.
deps:
	./scripts/deps

# Every test, with the race detector; the scenario tests in yarns/ start
# the real binaries. Then the tests of the STATEDB's users again, on
# PostgreSQL, directly and through pgbouncer; and last, side by side, the
# installed units under systemd (test-install, in a machine of its own)
# and the fault campaign's short form (unless FAULTS_SHORT is 0), which
# mostly waits out its faults, without the race detector (the scenarios
# above run the same binaries under it).
test: deps check
	$(GO) test -race -count=1 -p $(TESTP) -timeout 20m $(PKGS)
	LORRY_CONTROLLER_TEST_STATEDB=postgres $(GO) test -race -count=1 -p $(TESTP) -timeout 20m $(PGPKGS)
	LORRY_CONTROLLER_TEST_STATEDB=postgres $(GO) test -race -count=1 -timeout 20m -run '$(PGYARNS)' ./yarns/
	$(PGB) $(GO) test -race -count=1 -p $(TESTP) -timeout 20m $(PGBPKGS)
	$(PGB) $(GO) test -race -count=1 -timeout 20m -run '^(TestScenarios|TestReplicaSessions)$$' ./yarns/
	$(PGB) $(GO) test -race -count=1 -timeout 20m -run '^TestReplicas$$/^postgres$$' ./yarns/
	@log=$$(mktemp); echo "./scripts/test-install > $$log (beside the fault campaign)"; \
	./scripts/test-install > $$log 2>&1 & inst=$$!; status=0; \
	if [ "$(FAULTS_SHORT)" = 1 ]; then \
		echo "$(FAULTS_ENV)=short $(GO) test -count=1 -timeout 20m -v -run '^TestFaults\$$' ./yarns/"; \
		$(FAULTS_ENV)=short $(GO) test -count=1 -timeout 20m -v -run '^TestFaults$$' ./yarns/ || status=$$?; \
	fi; \
	wait $$inst || status=$$?; cat $$log; rm -f $$log; exit $$status

# What make install ships, under a real systemd: a Debian root with the
# project installed, booted with systemd-nspawn, configured and checked
# as docs/operations.md goes, on SQLite and then on PostgreSQL. It takes
# root; without it, it says so and passes.
test-install:
	./scripts/test-install

# The fault campaign (TestFaults in yarns/): two WEBAPPs on a private
# PostgreSQL cluster and six minions running jobs that print numbered
# lines, while minions and WEBAPPs are stopped and killed, answers are
# dropped and delayed, a WEBAPP's clock runs ahead and PostgreSQL restarts;
# each fault alone, then mixed until FAULTS_DURATION is up. It prints its
# figures (jobs, faults by kind, anomalies by kind) and fails on any
# anomaly. FAULTS_SEED replays a schedule. Its short form, each fault once
# alone (about three minutes), runs in make test unless FAULTS_SHORT=0.
FAULTS_DURATION ?= 10m
FAULTS_SEED     ?=
FAULTS_SHORT    ?= 1
FAULTS_TIMEOUT  ?= 2h
FAULTS_ENV      := LORRY_CONTROLLER_TEST_FAULTS
faults:
	$(FAULTS_ENV)=$(FAULTS_DURATION) $(FAULTS_ENV)_SEED=$(FAULTS_SEED) \
		$(GO) test -count=1 -timeout $(FAULTS_TIMEOUT) -v -run '^TestFaults$$' ./yarns/

# Benchmarks print their figures; see docs/performance.md.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m $(PKGS)

# The simulation of a large installation, a million lorries and 500
# minions by default, against a real WEBAPP (docs/performance.md). LCSIM
# passes it flags: make bench-sim LCSIM='--lorries 100000 --duration 1m'.
LCSIM ?=
bench-sim:
	$(GO) run ./cmd/lcsim $(LCSIM)

# Each fuzz target for FUZZTIME; make test runs only their seeds, in
# testdata/fuzz/<target> beside each package. What a target finds is
# written there too, to be fixed and kept as a seed.
FUZZTIME     ?= 30s
FUZZ_TARGETS := confgit:FuzzParseConf confgit:FuzzParseInterval lorryspec:FuzzParseFile routes:FuzzReadParams \
	routes:FuzzParseBearer cron:FuzzParse cron:FuzzParseFiveField cron:FuzzFirstMatch

fuzz:
	@for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t#*:} for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}\$$" -fuzztime $(FUZZTIME) ./$${t%%:*} || exit 1; \
	done

# The screenshots of the pages in docs/screenshots, taken anew by the
# browser tests (which need chromium).
screenshots:
	$(GO) test -count=1 -run 'TestRunningJobOutputGrowsAndStops' ./routes/browsertest -args -screenshots $(CURDIR)/docs/screenshots

# gofmt, goimports, go vet, a tidy go.mod, staticcheck and govulncheck;
# the last three are pinned in go.mod as tools. govulncheck reads its database from
# GOVULNDB; where that cannot be reached, check says so and skips it.
GOVULNDB ?= https://vuln.go.dev
check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@out=$$($(GO) tool goimports -local lorrycontroller.dev/lc -l $$(git ls-files '*.go')); \
	if [ -n "$$out" ]; then echo "goimports would change (our packages go in a group after the others):"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) mod tidy -diff
	$(GO) tool staticcheck $(PKGS)
	@if curl -sfo /dev/null -m 20 $(GOVULNDB)/index/db.json.gz; then \
		echo "$(GO) tool govulncheck -db $(GOVULNDB) $(PKGS)"; \
		$(GO) tool govulncheck -db $(GOVULNDB) $(PKGS); \
	else \
		echo "govulncheck skipped: its database $(GOVULNDB) cannot be reached (set GOVULNDB to a mirror)"; \
	fi

clean:
	rm -rf $(BIN)

# The programs, the systemd units, the service user and state directory,
# the configuration files, the CONFGIT hooks, and the alerting rules and
# dashboard; docs/operations.md says
# what to do next. A configuration file already there is kept, with the
# new one beside it as .new.
install: build
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SYSTEMDDIR) $(DESTDIR)$(SYSUSERSDIR) \
		$(DESTDIR)$(TMPFILESDIR) $(DESTDIR)$(SYSCONFDIR)/lorry-controller $(DESTDIR)$(HOOKDIR) $(DESTDIR)$(DOCDIR)
	for p in $(PROGRAMS); do $(INSTALL) -m 0755 $(BIN)/$$p $(DESTDIR)$(BINDIR)/$$p || exit 1; done
	for u in $(UNITS); do \
		$(SUBST) units/$$u >$(DESTDIR)$(SYSTEMDDIR)/$$u && chmod 0644 $(DESTDIR)$(SYSTEMDDIR)/$$u || exit 1; \
	done
	$(INSTALL) -m 0644 units/lorry-controller.sysusers $(DESTDIR)$(SYSUSERSDIR)/lorry-controller.conf
	$(INSTALL) -m 0644 units/lorry-controller.tmpfiles $(DESTDIR)$(TMPFILESDIR)/lorry-controller.conf
	$(INSTALL) -m 0755 hooks/post-update $(DESTDIR)$(HOOKDIR)/post-update
	$(SUBST) hooks/pre-receive >$(DESTDIR)$(HOOKDIR)/pre-receive && chmod 0755 $(DESTDIR)$(HOOKDIR)/pre-receive
	$(INSTALL) -m 0644 docs/operations.md $(DESTDIR)$(DOCDIR)/operations.md
	$(INSTALL) -m 0644 docs/security.md $(DESTDIR)$(DOCDIR)/security.md
	$(INSTALL) -d $(DESTDIR)$(DOCDIR)/prometheus $(DESTDIR)$(DOCDIR)/grafana
	for f in $(ALERTS); do $(INSTALL) -m 0644 etc/$$f $(DESTDIR)$(DOCDIR)/$$f || exit 1; done
	for c in $(CONFIGS); do \
		dst=$(DESTDIR)$(SYSCONFDIR)/lorry-controller/$$c; \
		if [ -e $$dst ]; then dst=$$dst.new; echo "keeping $(DESTDIR)$(SYSCONFDIR)/lorry-controller/$$c; the new one is $$dst"; fi; \
		$(SUBST) etc/$$c >$$dst && chmod 0644 $$dst || exit 1; \
	done
	@echo "Then make the tokens, as the service user (docs/security.md):"
	@echo "  runuser -u lorry-controller -- lorry-controller-webapp token create --role admin --name admin --config $(SYSCONFDIR)/lorry-controller/webapp.conf >$(SYSCONFDIR)/lorry-controller/admin.token"
	@echo "  runuser -u lorry-controller -- lorry-controller-webapp token create --role minion --name \$$(hostname) --config $(SYSCONFDIR)/lorry-controller/webapp.conf >$(SYSCONFDIR)/lorry-controller/minion.token"
	@echo "  chown lorry-controller: $(SYSCONFDIR)/lorry-controller/*.token; chmod 0600 $(SYSCONFDIR)/lorry-controller/*.token"
	@echo "Jobs run as lorry-controller-jobs (job-user in minion.conf): put lorry's ssh keys and git configuration"
	@echo "for the git hosts in its home, /var/lib/lorry-controller/jobs (docs/operations.md)."

# Removes what install put in place but the configuration in
# $(SYSCONFDIR)/lorry-controller and the state in /var/lib/lorry-controller.
uninstall:
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,$(PROGRAMS))
	rm -f $(addprefix $(DESTDIR)$(SYSTEMDDIR)/,$(UNITS))
	rm -f $(DESTDIR)$(SYSUSERSDIR)/lorry-controller.conf $(DESTDIR)$(TMPFILESDIR)/lorry-controller.conf
	rm -f $(DESTDIR)$(HOOKDIR)/post-update $(DESTDIR)$(HOOKDIR)/pre-receive $(DESTDIR)$(DOCDIR)/operations.md $(DESTDIR)$(DOCDIR)/security.md
	rm -f $(addprefix $(DESTDIR)$(DOCDIR)/,$(ALERTS))
	rmdir $(DESTDIR)$(DOCDIR)/prometheus $(DESTDIR)$(DOCDIR)/grafana 2>/dev/null || true
	rmdir $(DESTDIR)$(HOOKDIR) $(DESTDIR)$(DATADIR)/lorry-controller $(DESTDIR)$(DOCDIR) 2>/dev/null || true
	@echo "kept $(DESTDIR)$(SYSCONFDIR)/lorry-controller (configuration) and /var/lib/lorry-controller (state)"
