# ebb's entry points. `make test` is the whole check, set-up included, and
# is what CI runs (.ci/run).

GO      ?= go
BIN     ?= bin/ebb
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# make bench BENCH=DropTable PKG=./store/pebble/ narrows a run.
BENCH   ?= .
PKG     ?= ./...

.PHONY: test test-cql test-cluster cluster-all cluster-run cluster-features check perf build bench bench-peers clean fuzz fuzz-short

# test starts dynalite and Amazon's DynamoDB Local (installing each with
# npm ci the first time) and a single Cassandra node (installing its jars
# with Maven the first time) so the DynamoDB and CQL backends run their
# conformance suites too, then runs check with every backend selected
# (EBB_TEST_BACKENDS=all: a backend without its endpoint fails the run,
# never skips). A second, idle DynamoDB Local
# (EBB_DYNAMODB_TTL_ENDPOINT) serves the test of its native TTL process.
# moto's server mode (PyPI, in a virtual environment kept in the user's
# cache, see scripts/with-moto.sh) serves S3 to the archive tests (EBB_S3_ENDPOINT).
# Prometheus's promtool (Debian's prometheus package, installed when
# missing) checks and unit-tests docs/prometheus/alerts.yml. Debian's
# chromium (installed when missing) runs the dashboard's browser tests.
# A three-node Cassandra cluster (EBB_CASSANDRA_NODES=3, on 127.0.0.1 to
# .3, fsync on) serves the cluster tests (see test-cluster).
# The servers boot at the same time, while check vets: each script records
# the wait for its server in EBB_TEST_SERVERS_PENDING, and check waits
# for them all (scripts/await-test-servers.sh) before the tests, the
# Python client's among them (see check).
test: override export EBB_TEST_BACKENDS = all
test:
	pending="$$(mktemp)"; trap 'rm -f "$$pending"' EXIT; \
	EBB_TEST_SERVERS_PENDING="$$pending" \
	./scripts/with-chromium.sh ./scripts/with-promtool.sh ./scripts/with-dynalite.sh ./scripts/with-dynamodb-local.sh \
		env EBB_DYNAMODB_LOCAL_VAR=EBB_DYNAMODB_TTL_ENDPOINT ./scripts/with-dynamodb-local.sh \
		env EBB_CASSANDRA_NODES=3 ./scripts/with-cassandra.sh \
		./scripts/with-cassandra.sh ./scripts/with-moto.sh $(MAKE) --no-print-directory check

# test-python runs the Python client's tests (clients/python) in a virtual
# environment (tools/python/venv, made the first time; the client and its
# test extras from PyPI) against `ebb serve` processes they build and
# start: scripts/test-python.sh. PYTEST_ARGS narrows a run.
.PHONY: test-python
test-python:
	GO=$(GO) ./scripts/test-python.sh $(PYTEST_ARGS)

# test-cql runs the CQL variants of the packages with CQL-backed tests
# (EBB_TEST_BACKENDS=cql: no DynamoDB endpoint needed), against a fresh
# Cassandra node, or against EBB_CQL_HOSTS when it is set:
#   EBB_CQL_HOSTS=127.0.0.1:9042 make test-cql
test-cql: export EBB_TEST_BACKENDS = cql
test-cql:
	./scripts/with-cassandra.sh $(GO) test -race -timeout 9m ./store/cql/... ./timeseries/ ./shardmgr/ ./lists/ ./expiry/ ./multitable/ ./migrate/cqllegacy/

# test-cluster starts a three-node Apache Cassandra cluster
# (EBB_CASSANDRA_NODES=3 scripts/with-cassandra.sh: nodes on 127.0.0.1, .2
# and .3, every one a seed, the commit log synced every 10 s as Cassandra
# ships it) and runs cluster-run and cluster-features on it; with
# EBB_CQL_CLUSTER_HOSTS and EBB_CQL_CLUSTER_DIR set it uses that cluster.
# make test runs the same (cluster-all) inside check, beside the other
# tests.
test-cluster:
	EBB_CASSANDRA_NODES=3 ./scripts/with-cassandra.sh $(MAKE) --no-print-directory cluster-all

# CLUSTER_REPLICATION is the test keyspaces' replication on the cluster:
# three replicas, so that LOCAL_QUORUM (the Store's default) is two.
CLUSTER_REPLICATION = {'class': 'NetworkTopologyStrategy', 'datacenter1': 3}
# cluster-run runs, on the cluster in EBB_CQL_CLUSTER_HOSTS, the tests of
# nodes killed during writes, of schema changes with a node down and
# through two nodes at once, and of the lease through its node's death
# (store/cql/cqlcluster: two outages, on which every check of a node down
# runs, since each death and restart takes half a minute or more; without
# the race detector), on nodes that flush their schema at every change as
# a deployment does.
cluster-run:
	./scripts/cassandra-cluster-mode.sh durable
	EBB_TEST_BACKENDS=cql-cluster $(GO) test -count=1 -timeout 20m ./store/cql/cqlcluster/

# CLUSTER_PACKAGES are the store's own package (its conformance suite and
# the tests of what it writes) and the feature suites (index shards and
# their manager, lists, shared tables, the sweeper). Their cql variants run
# on the three-node cluster, under the race detector (cluster-features);
# check's race run (check-tests) runs every other variant of them, and
# the cql variants of the rest of the packages on the lone node. Each cql
# variant so runs once, where it is hardest: while they ran on the lone
# node as well, that node used 212 CPU-seconds of a make test (36 since),
# and the cluster's nodes and the race run the cores it took. Named
# longest first for the race run (expiry 74 s, multitable 56 s, ...); on
# the cluster they run one at a time, in any order.
CLUSTER_PACKAGES = ./expiry/ ./multitable/ ./timeseries/ ./lists/ ./shardmgr/ ./store/cql/

# CLUSTER_GROUPS are CLUSTER_PACKAGES grouped for cluster-features, each
# group's packages joined by commas: the packages of a group run one after
# another on one emptied cluster. Measured on fast nodes, one package at a
# time, the race detector on (node-CPU-seconds): a package run after others
# on the same cluster costs the nodes no more than on one emptied for it
# while the tables left there stay in the hundreds (lists 54 after the
# store's package, against 72 and 78 alone; shared tables 44 to 46 after
# the sweeper's, 45 to 52 alone; the shard manager 32 after both, 34 to 36
# alone), and saves the restart (12 node-CPU-seconds and about 11 s) and
# the nodes' compiling anew. Past a thousand tables each package costs more
# (see docs/backends.md): the groups stay at 300 to 450 tables, timeseries
# (287 tables of its own, 97 node-CPU-seconds) alone.
comma := ,
CLUSTER_GROUPS = ./store/cql/,./lists/ ./expiry/,./multitable/,./shardmgr/ ./timeseries/
ifneq ($(sort $(CLUSTER_PACKAGES)),$(sort $(subst $(comma), ,$(CLUSTER_GROUPS))))
$(error CLUSTER_GROUPS must hold each of CLUSTER_PACKAGES once: $(CLUSTER_GROUPS))
endif

# cluster-features runs CLUSTER_PACKAGES's cql variants (EBB_TEST_BACKENDS=cql)
# under the race detector on the cluster in EBB_CQL_CLUSTER_HOSTS, with
# keyspaces at replication factor 3 and LOCAL_QUORUM. Before each of
# CLUSTER_GROUPS the nodes are restarted empty and without the schema
# flushes (scripts/cassandra-cluster-mode.sh fresh, about 11 s: these
# tests kill no node, and each of their keyspaces and tables is created in
# tens of milliseconds instead of seconds), and the tests leave their
# keyspaces behind instead of dropping each (EBB_CQL_KEEP_KEYSPACES=1, see
# internal/testselect): a drop cost the nodes more than the test, and
# left on one cluster for all six packages the keyspaces slowed every
# later schema change. One package at a time, two tests at a time: these
# suites create and drop thousands of tables, and on a machine kept busier
# (two packages at a time beside the race run, load average 13 to 50) the
# nodes missed schema pushes and fell minutes behind (a change then fails
# at TableTimeout, see docs/backends.md). Every group runs even when one
# fails, and go test runs each of a group's packages (-p 1: one at a
# time); the target fails if any did. In check they start once cluster-run
# ends, beside the rest of the race run (cluster-all).
cluster-features:
	@status=0; for g in $(CLUSTER_GROUPS); do \
		./scripts/cassandra-cluster-mode.sh fresh || exit 1; \
		pkgs="$$(echo "$$g" | tr , ' ')"; \
		echo "go test -race -count=1 -p 1 -parallel 2 -timeout 40m $$pkgs (cql, on the emptied cluster)"; \
		EBB_TEST_BACKENDS=cql EBB_CQL_HOSTS="$$EBB_CQL_CLUSTER_HOSTS" EBB_CQL_REPLICATION="$(CLUSTER_REPLICATION)" \
			EBB_CQL_KEEP_KEYSPACES=1 $(GO) test -race -count=1 -p 1 -parallel 2 -timeout 40m $$pkgs || status=1; \
	done; exit $$status

# NORACE_TESTS are the tests check runs without the race detector, after
# the race run that skips them. Each moves data at the size that is its
# point: pages filled to the 4 MiB limit through encoding/json, on both
# listeners (TestPageBytesAreBounded); a query window of 480,000
# partitions paged through against the partition budget
# (TestQueryVisitsAtMostTheBudget); a 48 MiB disk filled to its
# free-space floor (TestFullDisk); a migration off an embedded legacy
# table of 100,000 events (TestEndToEndTable). Under the race detector
# these took 2 minutes of CPU between them, 10 to 20 times what they take
# without it (Pebble's invariant checks, on under -race, weigh most),
# while the race run covers the same code at smaller sizes: the page
# budget in TestResponseBudget, the router in the timeseries suites, the
# disk floor in TestFullDiskWithoutFloorRecovers and TestDiskFaults, the
# migration in the DynamoDB and Cassandra end-to-end tests.
NORACE_TESTS = ^(TestPageBytesAreBounded|TestQueryVisitsAtMostTheBudget|TestFullDisk|TestEndToEndTable)$$

# RACE_FIRST are the packages whose race runs take longest, longest first
# (in make test on 2026-11-28: 122, 121, 103, 78, 72 and 62 s).
# go test starts packages in the order they are named, two at a time on
# two cores; named in go list's order these came last and ran on after the
# rest had finished, alone on a half-idle machine (they wait on the test
# servers much of the time). Named first, they run beside the short ones.
RACE_FIRST = ./cmd/ebb/ . ./store/dynamo/ ./server/ ./migrate/dynamolegacy/ ./migrate/cqllegacy/

# RACE_PARALLEL is how many parallel tests each package of the race run
# runs at once. go test's default is GOMAXPROCS, 2 here, and most parallel
# tests are remote-backend variants (and the suites' subtests on them) that
# spend their time waiting on the test servers: two at a time, a package's
# dozens of them queued one pair after another while the cores idled.
# Each owns its tables or keyspace, so more of them overlap their round
# trips; the CPU-bound tests on the embedded backend run beside them.
RACE_PARALLEL = 8

# check is vet, formatting and every test under the race detector, with
# every backend selected (EBB_TEST_BACKENDS=all), against the
# EBB_DYNAMODB_ENDPOINT / EBB_DYNAMODB_LOCAL_ENDPOINT /
# EBB_DYNAMODB_TTL_ENDPOINT / EBB_CQL_HOSTS the environment provides: one
# that is missing fails the run. A plain `go test ./...` selects the
# embedded backend alone and needs none of them. The tests on the
# three-node cluster (cluster-run) run at the same time as the rest
# (check-tests): they wait on the cluster's Paxos rounds, schema agreement
# and node restarts far more than they use a core, so side by side the two
# take little more than the longer of them; --output-sync prints each
# one's output whole when it ends. A failure in either fails check, after
# both have finished. A node's restart beside the race run can take
# minutes on two cores, so a restart waits up to 600 s unless
# EBB_CASSANDRA_START_TIMEOUT says otherwise. Once cluster-run ends,
# CLUSTER_PACKAGES's cql variants (cluster-features) follow it on the
# cluster, beside what is left of the race run (cluster-all). The other
# part (check-local: check-tests) runs at a lower priority (nice 5) and leaves the
# nodes the cores they ask for: the nodes are what fell behind on the
# schema under load, and at the same priority the cluster's part ended
# last (970 s in all); at nice 5 the two ended within a minute of each
# other (967 and 982 s). With each cql variant run once the whole took
# 766 s, the part off the cluster ending 70 s before the cluster's; at
# nice 10, 778 s (one run each: no gain, not kept). With the cluster
# emptied before each of CLUSTER_PACKAGES (cluster-features), 749 and
# 709 s, the cluster's part ending about 100 s before the other (first run);
# with CLUSTER_GROUPS, 649 s, the cluster's part ending 148 s before the
# other, whose last 40 s (the Python client's tests) kept the cores under a
# fifth busy. So the Python client's tests and the fuzz targets' short
# run, which need neither the test servers nor the race run, followed the
# cluster's part instead, beside the end of the race run: 597, 605 and
# 641 s, the two parts ending within 10 s of each other; the Python suite
# there kept the cores under a third busy for half a minute (it mostly
# waits), so it now runs beside both from the start (check-python). The
# race run three test binaries at a time instead of two (go test -p 3)
# kept the cores busier (97% against 93 to 95%): 596, 624 and 643 s,
# against 650 and 687 s for this order right after, on a host that was
# slowing down all the while (see docs/backends.md); not settled, so two
# stay.
check: override export EBB_TEST_BACKENDS = all
# The binaries the check links (some 40 test binaries, and the ebb binaries
# tests build) carry no DWARF: a debugger needs it, a panic's or a race
# report's stack does not (it reads the symbol table, which stays). It halves
# linking (a race-built server.test: 3.7 to 4.0 CPU-s, then 1.9 to 2.0).
check: export GOFLAGS += -ldflags=-w
check:
	$(GO) vet ./...
	@unformatted="$$(find . -name '*.go' -not -path './.git/*' -not -path '*/node_modules/*' -not -path '*/testdata/*' -print0 | xargs -0 -r gofmt -l)"; \
	if [ -n "$$unformatted" ]; then \
		echo "gofmt: these files need formatting (run gofmt -w):"; echo "$$unformatted"; exit 1; \
	fi
	./scripts/await-test-servers.sh
	EBB_CASSANDRA_START_TIMEOUT=$${EBB_CASSANDRA_START_TIMEOUT:-600} $(MAKE) --no-print-directory -j3 --output-sync=target check-local check-cluster check-python

# check-local is check's race run and the tests after it (check-tests),
# beside check-cluster.
.PHONY: check-local
check-local:
	nice -n 5 $(MAKE) --no-print-directory check-tests

# check-cluster is check's part on the cluster (cluster-all), then the
# fuzz targets' short run, beside what is left of check-local.
.PHONY: check-cluster
check-cluster:
	$(MAKE) --no-print-directory cluster-all
	nice -n 5 $(MAKE) --no-print-directory fuzz-short

# check-python is the Python client's tests, beside the other two.
.PHONY: check-python
check-python:
	nice -n 5 $(MAKE) --no-print-directory test-python

# cluster-all is check's part on the cluster: cluster-run, then
# cluster-features as soon as it ends, beside what is left of the race run.
cluster-all:
	$(MAKE) --no-print-directory cluster-run
	$(MAKE) --no-print-directory cluster-features

# check-tests is check's tests beside the cluster's: every package under
# the race detector, then the runs without it and the peer module.
.PHONY: check-tests
check-tests: override export EBB_TEST_BACKENDS = all
check-tests:
	# EBB_TEST_LISTENER=both: the server's tests run twice in their one
	# test process, the second time with every request sent to the hot
	# listener (ebb serve --hot-addr) instead of net/http (each test that
	# serves on the listener the variable names; see server_test.go).
	# The cluster's tests (store/cql/cqlcluster) run beside it, in
	# cluster-run. -parallel RACE_PARALLEL: see there.
	# CLUSTER_PACKAGES's cql variants run on the cluster instead
	# (cluster-features): here their other backends run, in a go test of
	# their own (the selection is the process's), then every other
	# package on every backend.
	EBB_TEST_BACKENDS=pebble,dynamodb $(GO) test -race -timeout 15m -parallel $(RACE_PARALLEL) -skip '$(NORACE_TESTS)' $(CLUSTER_PACKAGES)
	EBB_TEST_LISTENER=both $(GO) test -race -timeout 15m -parallel $(RACE_PARALLEL) -skip '$(NORACE_TESTS)' $$($(GO) list $(RACE_FIRST) ./... | grep -v -e '/store/cql/cqlcluster$$' $(CLUSTER_PACKAGES:./%/=-e '/%$$'))
	# The tests whose size is their point run without the race detector
	# (see NORACE_TESTS), on both listeners.
	EBB_TEST_LISTENER=both $(GO) test -count=1 -run '$(NORACE_TESTS)' ./server/ ./timeseries/ ./internal/faultfs/ ./migrate/
	# The peer benchmarks' module (its own go.mod, which must follow the
	# main module's requirements) builds, and its MessagePack decoder reads
	# what the server writes.
	cd bench/peers && $(GO) vet ./... && $(GO) test -count=1 -run 'TestMsgpackInterop' ./
	# The race detector slows Pebble's conditional deletes ~30x, so the
	# full-size expiry checks (100k rows expiring in one millisecond, all
	# deleted by one pass; the sweep schedule under 10k rows/s on a fake
	# clock) run once more without it. Neither measures speed: that is
	# make perf.
	$(GO) test -count=1 -run 'TestPebble/MassExpiry|TestLagSchedule' ./expiry/

# perf runs, outside make test, the checks that hold only on a quiet
# machine (a busy one must not fail make test) and the long full-size run
# that make test runs smaller. It starts dynalite (as make test does) and
# runs:
# - expiry's BenchmarkLag at 10,000 rows expiring per second in real time:
#   it fails when the writer reaches less than 90% of the rate or the p99
#   physical-delete lag exceeds two sweep intervals (TestLagSchedule in
#   make test checks the same schedule on a fake clock);
# - the migration's end to end test on a legacy table of 100,000 events on
#   dynalite (about 80 s; make test runs it with 10,000 under the race
#   detector).
perf:
	./scripts/with-dynalite.sh $(MAKE) --no-print-directory perf-run

.PHONY: perf-run
perf-run: override export EBB_TEST_BACKENDS = dynalite
perf-run:
	$(GO) test -count=1 -run '^$$' -bench '^BenchmarkLag$$/^rows-per-second-10000$$' -benchtime 1x ./expiry/
	EBB_MIGRATE_E2E_EVENTS=100000 $(GO) test -count=1 -run '^TestEndToEndDynalite$$' ./migrate/dynamolegacy/

# The fuzz targets of the request decoders (server/fuzz_test.go) and of the
# hot listener's gate (server/hotgate_fuzz_test.go), each
# from its checked-in seed corpus (server/testdata/fuzz): fuzz-short runs
# each for FUZZTIME (3,000 inputs, one to a few seconds, for check), fuzz
# for FUZZTIME_LONG, all
# from one fuzz-instrumented test binary built once (what `go test -fuzz`
# would build and link for each target). New inputs the fuzzer finds stay
# in Go's cache, where `go test -fuzz` keeps them; a failing one is written
# to server/testdata/fuzz, where it becomes a regression test.
FUZZ_TARGETS = FuzzPath FuzzQuery FuzzBody FuzzPageToken FuzzAuthHeader FuzzGate
# fuzz-short counts inputs rather than seconds: with a duration, Go's fuzz
# coordinator up to 1.26 can fail a target that found nothing ("context
# deadline exceeded", no failing input written) when a worker on a busy
# machine is still running an input as the time ends (Go issue 75804,
# fixed in Go 1.27); make test met it once, FuzzAuthHeader, beside the race
# run. A count has no deadline to race.
FUZZTIME ?= 3000x
fuzz-short:
	@dir="$$(mktemp -d)"; trap 'rm -rf "$$dir"' EXIT; \
	$(GO) test -c -fuzz . -o "$$dir/server.test" ./server/ || exit 1; \
	cache="$$($(GO) env GOCACHE)/fuzz/github.com/ebb-data/ebb/server"; \
	for t in $(FUZZ_TARGETS); do \
		echo "fuzz $$t: $(FUZZTIME)"; \
		(cd server && "$$dir/server.test" -test.run '^$$' -test.fuzz "^$$t\$$" \
			-test.fuzztime $(FUZZTIME) -test.fuzzcachedir "$$cache") || exit 1; \
	done

# fuzz also runs schemathesis (PyPI, installed into tools/schemathesis/venv
# the first time by scripts/with-schemathesis.sh) from docs/openapi.yaml
# against a live `ebb serve` with an auth file, for FUZZ_OPENAPI_TIME
# seconds (scripts/fuzz-openapi.sh): no 5xx, no panic, every status and
# body as the spec declares.
FUZZTIME_LONG ?= 5m
FUZZ_OPENAPI_TIME ?= 300
fuzz: build
	$(MAKE) --no-print-directory fuzz-short FUZZTIME=$(FUZZTIME_LONG)
	FUZZ_OPENAPI_TIME=$(FUZZ_OPENAPI_TIME) ./scripts/with-schemathesis.sh ./scripts/fuzz-openapi.sh $(BIN)

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/ebb

# bench runs the benchmarks; each sits beside its baseline, so the ratio
# comes from one run on one machine.
bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -timeout 60m $(PKG)

# bench-peers runs the comparisons with ebb's peers (bench/peers, a module
# of its own so that ebb's never depends on Badger or Redis clients) and
# prints their ratio tables: event ingest and expiry in ebb, Badger and raw
# Pebble from each number of writers in PEER_WRITERS (cmd/ingest-expire),
# then list reads from `ebb serve` under wrk beside Redis under
# redis-benchmark (listget.sh). wrk, redis-server and redis-tools are
# installed from Debian's packages when missing. Each comparison runs
# PEER_ROUNDS rounds; PEER_FLAGS go to ingest-expire (-events, -sync...).
PEER_ROUNDS  ?= 3
PEER_WRITERS ?= 1 16
PEER_FLAGS   ?=
bench-peers: build
	@for w in $(PEER_WRITERS); do \
		(cd bench/peers && $(GO) run ./cmd/ingest-expire -rounds $(PEER_ROUNDS) -writers $$w $(PEER_FLAGS)) || exit 1; \
	done
	ROUNDS=$(PEER_ROUNDS) ./scripts/with-peer-tools.sh bench/peers/listget.sh $(BIN)

clean:
	rm -rf bin
