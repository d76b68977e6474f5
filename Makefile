# rlserver: `make run` builds and starts the server on 127.0.0.1:6380, `make test` runs every test.
GO      ?= go
ADDR    ?= 127.0.0.1:6380
BIN     := bin/rlserver

.PHONY: build run test bench bench-server bench-client bench-replication soak experiments scale docs release clean

build:
	$(GO) build -o $(BIN) ./cmd/rlserver

run: build
	./$(BIN) -addr $(ADDR)

# go vet, then every test under the race detector (the compat suite needs redis-server
# on PATH, the clients/ suite python3-redis and `npm ci --prefix clients/testdata`;
# .ci/run installs them and sets RLSERVER_REQUIRE_REDIS=1 so that nothing skips).
test:
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 30m ./...

# Engine benchmarks: bytes per key, ns/op per algorithm, GC pause.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./algo/ ./ttl/ ./store/

# rlserver vs redis-server + Lua through redis-benchmark, in the same run.
bench-server: build
	./scripts/bench-server.sh

# The Go client's auto-batching against go-redis's own pool, in the same run, on an rlserver
# process on loopback: 256 goroutines calling Allow on random keys, then 256 HTTP clients
# through the middleware. The last line is the headline (README, "Go client").
bench-client: build
	$(GO) run ./cmd/rlbench client -rlserver-bin $(BIN)

# Replication on loopback: redis-benchmark's RL.TOKEN -P 16 on a primary with 2 replicas
# against one with none (same run), the replicas' lag under that load, and the failover
# time after kill -9 with three Sentinels (redis-server --sentinel); see docs/ha.md.
bench-replication:
	RLSERVER_REQUIRE_REDIS=1 $(GO) test -run '^$$' -bench '^BenchmarkReplication$$' -benchtime 1x -v .

# The full soak: the built binary on loopback, 2,000 connections, a million mixed
# commands with garbage and half-sent requests, bounded to ~2 minutes (make test runs
# the same test small).
soak:
	RLSERVER_SOAK=1 $(GO) test -run '^TestSoak$$' -count=1 -timeout 5m -v ./cmd/rlserver/

# The lesson's lab, rlserver and Redis + Lua side by side, on servers rlbench starts;
# tables on stdout, JSON, PNG charts and summary.md in results/.
experiments:
	$(GO) run ./cmd/rlbench -start -out results all

# Aggregate throughput of 1 vs 3 rlserver nodes (cluster mode) and of 1 redis-server vs a
# 3-master Redis Cluster running the scripts, all started on loopback by rlbench, in turn:
# a table on stdout, results/scale.json and results/scale.png (docs/scaling.md).
scale: build
	$(GO) run ./cmd/rlbench -rlserver-bin $(BIN) -out results scale

# Regenerate docs/commands.md from the command table.
docs:
	$(GO) test ./resp -run TestCommandsDoc -update

# Static release binaries, the version stamped (rlserver --version, INFO): dist/rlserver-VERSION-linux-ARCH.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
RELEASE_ARCHS := amd64 arm64

release:
	@mkdir -p dist
	@for arch in $(RELEASE_ARCHS); do \
		out=dist/rlserver-$(VERSION)-linux-$$arch; \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath \
			-ldflags "-s -w -X github.com/rlserver/rlserver/resp.Version=$(VERSION)" -o $$out ./cmd/rlserver || exit 1; \
		echo $$out; \
	done

clean:
	rm -rf bin dist
