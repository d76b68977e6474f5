# rlserver: `make run` builds and starts the server on 127.0.0.1:6380, `make test` runs every test.
GO      ?= go
ADDR    ?= 127.0.0.1:6380
BIN     := bin/rlserver
# rlbench is a module of its own (cmd/rlbench/go.mod) and runs in its directory: the
# paths it is given are absolute.
RLBENCH := $(GO) run -C cmd/rlbench .

.PHONY: build run test lint test-heap cross bench bench-server bench-client bench-slices bench-rls bench-edge bench-overload bench-replication bench-reshard bench-persistence soak experiments scale docs release image image-rootfs clean

build:
	$(GO) build -o $(BIN) ./cmd/rlserver

run: build
	./$(BIN) -addr $(ADDR)

# The modules: the root, which applications import (client/, middleware/), and the
# benchmark harness and deploy/'s tests, each with a go.mod of its own so that their
# dependencies (gonum/plot, progressbar, the Kubernetes API) stay out of the root's.
MODULES := . cmd/rlbench deploy

# go vet, then every test under the race detector, in every module (the compat suite
# needs redis-server on PATH, the clients/ suite python3-redis and `npm ci --prefix
# clients/testdata`; deploy/'s image test podman or docker; .ci/run installs them and
# sets RLSERVER_REQUIRE_REDIS=1 and RLSERVER_REQUIRE_PODMAN=1 so that nothing skips),
# then the store's and client's tests on the heap fallback, then the cross-compile matrix.
test: lint
	@for m in $(MODULES); do $(GO) test -C $$m -race -count=1 -timeout 30m ./... || exit 1; done
	$(MAKE) test-heap cross

# go vet and staticcheck (its checks in staticcheck.conf) on every module.
STATICCHECK := $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint:
	@for m in $(MODULES); do echo "vet $$m"; $(GO) vet -C $$m ./... || exit 1; done
	@for m in $(MODULES); do echo "staticcheck $$m"; (cd $$m && $(STATICCHECK) ./...) || exit 1; done

# The store, the client and offheap with every array on the Go heap (internal/offheap's
# heap.go, what Windows and wasm get), so that path is tested on Linux, not only compiled.
test-heap:
	$(GO) vet -tags rlserver_heap ./internal/offheap/ ./store/ ./client/
	$(GO) test -race -count=1 -tags rlserver_heap ./internal/offheap/ ./store/ ./client/

# Every package, command and test of the root module builds and vets on each platform (go vet
# compiles the tests too): the client and middleware are imported by applications on macOS and
# Windows. cmd/rlbench and deploy are tools run on Linux; compiling Helm's and client-go's
# packages for eight platforms would add minutes to every run for nothing a user imports.
CROSS_OS    := linux darwin windows freebsd
CROSS_ARCHS := amd64 arm64

cross:
	@for os in $(CROSS_OS); do for arch in $(CROSS_ARCHS); do \
		echo "cross $$os/$$arch"; \
		GOOS=$$os GOARCH=$$arch $(GO) build -o /dev/null ./... || exit 1; \
		GOOS=$$os GOARCH=$$arch $(GO) vet ./... || exit 1; \
	done; done

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
	$(RLBENCH) client -rlserver-bin $(CURDIR)/$(BIN)

# The Go client's Slicer (in-process decisions from RL.SLICE's slices) on one hot key
# from 8 client processes, against the batched client and a count-then-flush client
# written for the comparison, on an rlserver process on CPU 0, the clients on CPU 1
# (taskset): decisions/s, round trips per decision and p99 with a limit no load
# reaches, then over-admission per 1 s window near the limit (about 30 s). The last
# line is the headline (docs/benchmarks.md).
bench-slices: build
	$(RLBENCH) slices -rlserver-bin $(CURDIR)/$(BIN)

# Envoy's rate limit service: ShouldRateLimit/s of one descriptor over 100,000 users at 32
# streams, rlserver -rls-addr against envoyproxy/ratelimit + redis-server (go install
# github.com/envoyproxy/ratelimit/src/service_cmd@... first; .ci/run does), started here,
# the servers on CPU 0 and the load on CPU 1 (taskset); then RSS per active descriptor value.
bench-rls: build
	$(RLBENCH) rls -rlserver-bin $(CURDIR)/$(BIN)

# At the edge: a static file through nginx (1 worker) alone, with auth_request to
# rlserver's /check (upstream keepalive), and with limit_req; nginx and rlserver on CPU 0,
# the load generator on CPU 1 (taskset). Headline: the p50 auth_request adds, its share of
# nginx alone's req/s.
bench-edge: build
	$(RLBENCH) edge -rlserver-bin $(CURDIR)/$(BIN)

# The append-only log: RL.TOKEN -P 16 and -P 1 with appendfsync everysec against no
# persistence, with always against Redis's INCR with appendfsync always on the same disk,
# and the start-up replay of a log against loading a snapshot (docs/persistence.md).
bench-persistence: build
	./scripts/bench-persistence.sh

# Replication on loopback: redis-benchmark's RL.TOKEN -P 16 on a primary with 2 replicas
# against one with none (same run), the replicas' lag under that load, and the failover
# time after kill -9 with three Sentinels (redis-server --sentinel); see docs/ha.md.
bench-replication:
	RLSERVER_REQUIRE_REDIS=1 $(GO) test -run '^$$' -bench '^BenchmarkReplication$$' -benchtime 1x -v ./test/ha/

# A reshard of a quarter of the slots of a node of 1M RL.FIXED keys to an empty one with
# redis-cli --cluster reshard while 8 ClusterClient goroutines call: keys moved per second,
# and the calls' p99 during the move against before it; then the same on two Redis Cluster
# nodes in the same run (docs/scaling.md).
bench-reshard:
	RLSERVER_REQUIRE_REDIS=1 $(GO) test -run '^$$' -bench '^BenchmarkReshard$$' -benchtime 1x -v ./test/cluster/

# The full soak: the built binary on loopback, 2,000 connections, a million mixed
# commands with garbage and half-sent requests, bounded to ~2 minutes (make test runs
# the same test small).
soak:
	RLSERVER_SOAK=1 $(GO) test -run '^TestSoak$$' -count=1 -timeout 5m -v ./cmd/rlserver/

# The lesson's lab, rlserver and Redis + Lua side by side, on servers rlbench starts;
# tables on stdout, JSON, PNG charts and summary.md in results/; then the lesson-002
# figures beside golang.org/x/time/rate (results/burst.json).
experiments:
	$(RLBENCH) -start -out $(CURDIR)/results all
	$(RLBENCH) burst -out $(CURDIR)/results

# The lesson's overload experiment (docs/overload.md): an app of 8 workers × 10 ms
# offered 0.5x to 3x its capacity, 20% critical, with no shedding, a static limit,
# failsafe-go's adaptive limiter, package shed, and three replicas sharing an
# RL.ACQUIRE limit with 20% reserved for critical in turn, each cell fresh app
# processes on loopback (about 95 s). The last line is the headline.
bench-overload:
	$(RLBENCH) overload

# Aggregate throughput of 1 vs 3 rlserver nodes (cluster mode) and of 1 redis-server vs a
# 3-master Redis Cluster running the scripts, all started on loopback by rlbench, in turn:
# a table on stdout, results/scale.json and results/scale.png (docs/scaling.md).
scale: build
	$(RLBENCH) -rlserver-bin $(CURDIR)/$(BIN) -out $(CURDIR)/results scale

# Regenerate docs/commands.md from the command table.
docs:
	$(GO) test ./resp -run TestCommandsDoc -update

# Static release binaries, the version stamped (rlserver --version, INFO):
# dist/rlserver-VERSION-OS-ARCH for linux and darwin, amd64 and arm64.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
RELEASE_OS    := linux darwin
RELEASE_ARCHS := amd64 arm64
RELEASE_FLAGS := -trimpath -ldflags "-s -w -X github.com/rlserver/rlserver/resp.Version=$(VERSION)"

release:
	@mkdir -p dist
	@for os in $(RELEASE_OS); do for arch in $(RELEASE_ARCHS); do \
		out=dist/rlserver-$(VERSION)-$$os-$$arch; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build $(RELEASE_FLAGS) -o $$out ./cmd/rlserver || exit 1; \
		echo $$out; \
	done; done

# The container image (Containerfile): the linux binary of this machine's architecture,
# built here with release's flags into build/image/rootfs, on scratch, by podman or else
# docker, with no network (nothing to pull). IMAGE_TOOL=docker chooses.
IMAGE       ?= localhost/rlserver:$(VERSION)
IMAGE_ARCH  ?= $(shell $(GO) env GOARCH)
IMAGE_TOOL  ?= $(shell command -v podman 2>/dev/null || command -v docker 2>/dev/null)
ROOTFS      := build/image/rootfs

image-rootfs:
	rm -rf $(ROOTFS)
	mkdir -p $(ROOTFS)/bin $(ROOTFS)/etc/rlserver/limits
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build $(RELEASE_FLAGS) -o $(ROOTFS)/bin/rlserver ./cmd/rlserver
	ln -s rlserver $(ROOTFS)/bin/ratelimit
	echo 'nonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin' > $(ROOTFS)/etc/passwd
	echo 'nonroot:x:65532:' > $(ROOTFS)/etc/group

image: image-rootfs
	@test -n "$(IMAGE_TOOL)" || { echo "make image: neither podman nor docker is installed" >&2; exit 1; }
	$(IMAGE_TOOL) build --network none --platform linux/$(IMAGE_ARCH) -f Containerfile \
		--build-arg VERSION=$(VERSION) -t $(IMAGE) .
	@echo $(IMAGE)

clean:
	rm -rf bin dist build
