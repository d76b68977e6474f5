// Command rlserver is a rate limiter that speaks the Redis protocol: start it,
// then call RL.TOKEN, RL.GCRA, CL.THROTTLE, ... from redis-cli or any Redis client.
// As redis-server, it takes a config file first (rlserver /etc/rlserver/rlserver.conf
// -flag value ...): every flag is a directive of the same name, and flags given as
// well win. This file is flags and wiring only: it builds the core (package core:
// store, clock, snapshots, role, metrics) and the RESP front over it (package resp).
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/core"
	"github.com/rlserver/rlserver/policy/config"
	"github.com/rlserver/rlserver/policy/engine"
	"github.com/rlserver/rlserver/policy/watch"
	"github.com/rlserver/rlserver/region"
	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/store"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "check-aof" {
		os.Exit(checkAOF(os.Args[2:], os.Stdout, os.Stderr))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		os.Exit(2) // parseFlags has printed the error
	}
	if opts.version {
		fmt.Printf("rlserver v=%s go=%s %s/%s\n", resp.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return
	}
	level := new(slog.LevelVar)
	level.Set(opts.level)
	opts.cfg.LogLevel = level
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	if err := run(ctx, opts, logger); err != nil {
		logger.Error("rlserver stopped", "err", err)
		os.Exit(1)
	}
}

// options are the parsed command line.
type options struct {
	addr    string
	port    int    // redis.conf's port, 0: -addr's
	bind    string // redis.conf's bind: addresses separated by spaces; empty: -addr's host
	tlsAddr string
	// metricsAddr serves Prometheus's /metrics over HTTP; empty: off.
	metricsAddr string
	// clusterNodes and clusterSelf are -cluster-nodes (empty: standalone) and -cluster-self.
	clusterNodes string
	clusterSelf  int
	// clusterEnabled, clusterConfigFile and clusterAnnounceIP are -cluster-enabled
	// (a node redis-cli --cluster builds the cluster of), its config file and the
	// address it gives the others and the clients.
	clusterEnabled    bool
	clusterConfigFile string
	clusterAnnounceIP string
	level             slog.Level
	version           bool // -v, --version: print it and exit
	cfg               resp.Config
	gw                gatewayOptions // gateway.go
	persist           persistOptions // persist.go
	region            region.Options // region.go
}

// getenv reads the environment for ratelimitEnv; tests replace it.
var getenv = os.Getenv

// parseFlags reads the command line: an optional config file first, then flags,
// which win over the file. On error it has printed the message (and, for a bad
// flag, the usage) to stderr; -h answers flag.ErrHelp after printing the usage.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	var confPath string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		confPath, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet("rlserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:6380", "`host:port` to listen on")
	fs.IntVar(&o.port, "port", 0, "redis.conf's port: listen on this `port` instead of -addr's; 0: -addr's")
	fs.StringVar(&o.bind, "bind", "", "redis.conf's bind: listen on each of these `addresses` (space-separated; a leading - makes one optional) instead of -addr's host")
	fs.StringVar(&o.cfg.RequirePass, "requirepass", "", "`password` every connection must give (AUTH, HELLO AUTH) before other commands; empty: none")
	fs.StringVar(&o.tlsAddr, "tls-addr", "", "`host:port` to listen on for TLS, besides -addr; empty: no TLS")
	fs.StringVar(&o.cfg.TLSCertFile, "tls-cert", "", "PEM certificate `file` for -tls-addr and -rls-tls")
	fs.StringVar(&o.cfg.TLSKeyFile, "tls-key", "", "PEM private key `file` for -tls-addr and -rls-tls")
	fs.StringVar(&o.cfg.TLSCACertFile, "tls-ca-cert-file", "", "PEM `file` of the CAs that sign client certificates, on every TLS listener")
	fs.StringVar(&o.cfg.TLSAuthClients, "tls-auth-clients", "", "client certificates: `yes` (required), optional or no; empty: yes with -tls-ca-cert-file, else no")
	fs.StringVar(&o.cfg.TLSClientSAN, "tls-client-san", "", "a `name` every client certificate must carry as a subject alternative name")
	fs.IntVar(&o.cfg.MaxClients, "maxclients", resp.DefaultMaxClients, "most connections at once; beyond, a new one gets an error and is closed")
	fs.Var((*secondsFlag)(&o.cfg.IdleTimeout), "timeout", "close a connection idle for this many `seconds`; 0: never")
	fs.Int64Var(&o.cfg.ProtoMaxBulkLen, "proto-max-bulk-len", resp.DefaultProtoMaxBulkLen, "largest bulk string a request may send, in `bytes`")
	fs.IntVar(&o.cfg.Shards, "shards", 0, "store shards, a power of two; 0 lets the store choose")
	fs.Int64Var(&o.cfg.MaxLogLimit, "max-log-limit", resp.DefaultMaxLogLimit, "largest limit RL.LOG accepts (its memory grows with the limit)")
	fs.BoolVar(&o.cfg.EnableDebugCommand, "enable-debug-command", false, "accept DEBUG CLOCK SET|ADVANCE|REAL, for tests")
	fs.Var((*memoryFlag)(&o.cfg.MaxMemory), "maxmemory", "bound on the store's memory in `bytes` (suffixes k, kb, m, mb, g, gb); 0: none")
	fs.TextVar(&o.cfg.MaxMemoryPolicy, "maxmemory-policy", store.PolicyVolatileTTL,
		"`policy` once -maxmemory is set: volatile-ttl evicts the keys closest to fresh, noeviction refuses new keys (OOM); without -maxmemory nothing is evicted, and CONFIG GET and INFO answer noeviction")
	fs.StringVar(&o.cfg.SnapshotPath, "snapshot", "", "snapshot `file`: loaded at start, saved when changed, on SAVE and at shutdown; empty: no snapshots")
	fs.DurationVar(&o.cfg.SnapshotInterval, "snapshot-interval", resp.DefaultSnapshotInterval, "how often a changed store is saved to -snapshot")
	fs.BoolVar(&o.cfg.SnapshotIgnoreCorrupt, "snapshot-ignore-corrupt", false, "start empty, with a warning, when the -snapshot file is corrupt, instead of refusing to start")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "`host:port` serving Prometheus metrics on /metrics; empty: off")
	fs.StringVar(&o.clusterNodes, "cluster-nodes", "", "cluster mode: every node's `host:port` (or host:port@first-last slots), comma-separated, the same list on every node; empty: standalone")
	fs.IntVar(&o.clusterSelf, "cluster-self", 0, "cluster mode: this node's `index` in -cluster-nodes, from 0")
	fs.BoolVar(&o.clusterEnabled, "cluster-enabled", false, "cluster mode as Redis's: start a node owning no slot, which redis-cli --cluster create, add-node and reshard build the cluster of")
	fs.StringVar(&o.clusterConfigFile, "cluster-config-file", "", "-cluster-enabled: the `file` the node keeps its view of the cluster in (Redis's nodes.conf format), read at start; empty: nodes.conf")
	fs.StringVar(&o.clusterAnnounceIP, "cluster-announce-ip", "", "-cluster-enabled: the `ip` the other nodes and the clients reach this node at; empty: -addr's host, or 127.0.0.1 for a wildcard")
	fs.StringVar(&o.cfg.ReplicaOf, "replicaof", "", "start as a replica of the rlserver at `host:port` (REPLICAOF); empty: a primary")
	fs.Var((*usersFlag)(&o.cfg.Users), "user", "an ACL `user`: its name then its rules, as Redis's user directive (\"alice on >pass ~tenantA:* +@ratelimit\"); once per user")
	fs.StringVar(&o.cfg.ACLFile, "aclfile", "", "Redis's aclfile: users loaded at start, written by ACL SAVE, read again by ACL LOAD; not with -user")
	fs.StringVar(&o.cfg.MasterAuth, "masterauth", "", "`password` a replica gives its primary (the primary's -requirepass, or -masteruser's)")
	fs.StringVar(&o.cfg.MasterUser, "masteruser", "", "ACL `user` a replica logs in to its primary as, with -masterauth; empty: the default user")
	fs.Var((*intMemoryFlag)(&o.cfg.ReplBacklogSize), "repl-backlog-size", "`bytes` of recent writes a primary keeps for replicas to continue from after a disconnection (suffixes k, mb, ...)")
	fs.IntVar(&o.cfg.ReplicaPriority, "replica-priority", 0, "Sentinel's replica `priority`: lower is promoted first; 0: Redis's default, 100; negative: never promoted")
	fs.Var((*levelFlag)(&o.level), "loglevel", "log `level`: debug, info, warn or error, or Redis's verbose, notice, warning (any case)")
	fs.Var((*microsFlag)(&o.cfg.SlowlogLogSlowerThan), "slowlog-log-slower-than",
		"`µs` from which a command enters SLOWLOG; 0: every command, negative: none")
	fs.Var(&countFlag{&o.cfg.SlowlogMaxLen, resp.DefaultSlowlogMaxLen}, "slowlog-max-len", "`entries` SLOWLOG keeps")
	fs.Var(&countFlag{&o.cfg.ACLLogMaxLen, resp.DefaultACLLogMaxLen}, "acllog-max-len", "`entries` ACL LOG keeps")
	gatewayFlags(fs, &o.gw)
	persistFlags(fs, &o.cfg, &o.persist)
	regionFlags(fs, &o.region)
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	fs.BoolVar(&o.version, "v", false, "print the version and exit")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: rlserver [config-file] [flags]\n\n"+
			"A rate limiter that speaks the Redis protocol (RESP2 and RESP3).\n"+
			"Try: redis-cli -p 6380 RL.TOKEN user:1 10 1000\n\n"+
			"The config file, in redis.conf's syntax, takes every flag as a directive of the same\n"+
			"name (maxclients 100; include other.conf); flags given as well win over it. As with\n"+
			"redis-server, --name value... sets any directive on the command line (--port 6380).\n\nFlags:\n")
		// Every flag with its default, zero values included (PrintDefaults hides them).
		fs.VisitAll(func(f *flag.Flag) {
			name, usage := flag.UnquoteUsage(f)
			if name != "" {
				name = " " + name
			}
			fmt.Fprintf(fs.Output(), "  -%s%s\n    \t%s (default: %s)\n", f.Name, name, usage, f.DefValue)
		})
	}
	if err := fs.Parse(redisArgs(fs, args)); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		err := fmt.Errorf("unexpected argument %q", fs.Arg(0))
		fmt.Fprintln(stderr, err)
		fs.Usage()
		return o, err
	}
	if confPath != "" {
		err := readConfig(fs, confPath, &o.cfg.Users)
		if err != nil {
			fmt.Fprintln(stderr, "rlserver:", err)
			return o, err
		}
		// CONFIG REWRITE writes it later, whatever the working directory is then.
		if o.cfg.ConfigFile, err = filepath.Abs(confPath); err != nil {
			fmt.Fprintln(stderr, "rlserver:", err)
			return o, err
		}
	}
	if err := ratelimitEnv(fs, getenv); err != nil {
		fmt.Fprintln(stderr, "rlserver:", err)
		return o, err
	}
	if err := applyPersist(&o.cfg, o.persist); err != nil {
		fmt.Fprintln(stderr, "rlserver:", err)
		return o, err
	}
	return o, nil
}

// run listens on opts.addr and serves until ctx is done (SIGINT, SIGTERM) or a
// client sends SHUTDOWN, then closes the core, which writes the final snapshot.
func run(ctx context.Context, opts options, logger *slog.Logger) (err error) {
	opts.cfg.Logger = logger
	if opts.clusterNodes == "" && opts.clusterSelf != 0 {
		return errors.New("-cluster-self needs -cluster-nodes, the list it indexes")
	}
	if opts.clusterEnabled {
		if opts.clusterNodes != "" {
			return errors.New("-cluster-enabled and -cluster-nodes do not go together: redis-cli --cluster builds an enabled cluster, -cluster-nodes is a fixed one")
		}
		topo, err := openCluster(opts)
		if err != nil {
			return err
		}
		opts.cfg.Cluster = topo
	}
	if opts.clusterNodes != "" {
		topo, err := cluster.New(strings.Split(opts.clusterNodes, ","), opts.clusterSelf)
		if err != nil {
			return err
		}
		// A node given another's index answers MOVED to itself for its own slots, and
		// clients follow that in a loop: refuse to start instead.
		_, port, err := net.SplitHostPort(opts.addr)
		if opts.port != 0 {
			port = strconv.Itoa(opts.port)
		}
		if err == nil && port != "0" && port != strconv.Itoa(topo.Self().Port) {
			return fmt.Errorf("-cluster-self %d names %s in -cluster-nodes, but -addr %s is another port: give each node its own index",
				opts.clusterSelf, topo.Self().Addr(), opts.addr)
		}
		opts.cfg.Cluster = topo
	}
	if err := opts.persist.chdir(); err != nil {
		return err
	}
	c, err := core.New(opts.cfg.Core())
	if err != nil {
		return err
	}
	// Last, after every front has returned: no command runs after the final snapshot.
	defer func() { err = errors.Join(err, c.Close()) }()
	var eng *engine.Engine // RL.POLICY's, which the gateway fronts share
	switch {
	case opts.gw.limits != "" && opts.gw.xds.server != "":
		return errors.New("-limits and -xds-server both give the policy: give one")
	case opts.gw.xds.server != "":
		eng = engine.New(c.Store(), nil)
		opts.cfg.Engine = eng
	case opts.gw.limits != "":
		p, err := config.Load(opts.gw.limits)
		if err != nil {
			return err // the file, the descriptor's path and the reason
		}
		eng = engine.New(c.Store(), p)
		opts.cfg.Engine = eng
		eng.LoadResult(nil)
	}
	tp, err := startTracing(ctx, opts.gw.tracing)
	if err != nil {
		return err
	}
	if tp != nil {
		defer func() { // after every front has returned
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err = errors.Join(err, tp.Shutdown(sctx)) // the spans still batched
		}()
		opts.cfg.TracerProvider, opts.cfg.TraceSampling = tp, opts.gw.tracing.cfg.SamplingRate
	}
	up, err := openRegion(ctx, opts.region, logger)
	if err != nil {
		return err
	}
	if up != nil {
		defer func() { err = errors.Join(err, up.Close()) }() // after every front has returned
		opts.cfg.Upstream = up
		c.Registry().MustRegister(up.Collector())
		if eng != nil {
			eng.SetUpstream(up) // its policies decided from the home's slices, as RL.* calls are
		}
	}
	srv, err := resp.NewFront(c, opts.cfg)
	if err != nil {
		return err
	}
	if eng != nil {
		c.Registry().MustRegister(eng.Collector())
	}
	if opts.gw.limits != "" {
		go func() { // a file that does not load keeps the old policy
			if err := watch.Watch(ctx, opts.gw.limits, eng, logger); err != nil {
				logger.Error("policy not watched: changes need a restart", "path", opts.gw.limits, "err", err)
			}
		}()
	}
	switch {
	case opts.tlsAddr != "" && opts.cfg.TLSCertFile == "":
		return errors.New("-tls-addr needs -tls-cert and -tls-key")
	case opts.cfg.TLSCertFile != "" && opts.tlsAddr == "" && !opts.gw.rlsTLS:
		return errors.New("-tls-cert and -tls-key serve -tls-addr (RESP) or -rls-tls (gRPC and HTTP): give either")
	}
	lns, err := listen(opts)
	if err != nil {
		return err
	}
	var ln net.Listener = lns[0]
	if len(lns) > 1 {
		for _, l := range lns[1:] {
			logger.Info("rlserver listening", "addr", l.Addr().String())
		}
		ln = newMultiListener(lns)
	}
	if opts.tlsAddr != "" {
		tlsLn, err := net.Listen("tcp", opts.tlsAddr)
		if err != nil {
			ln.Close()
			return err
		}
		logger.Info("rlserver listening for TLS", "addr", tlsLn.Addr().String())
		// Serve below returns once Close has stopped both listeners.
		go srv.ServeTLS(tlsLn)
	}
	if opts.gw.xds.server != "" {
		if err := startXDS(ctx, opts.gw.xds, eng, logger); err != nil {
			ln.Close()
			return err
		}
	}
	gw, err := startGateway(c, eng, opts.gw, traceProvider(tp), logger)
	if err != nil {
		ln.Close()
		return err
	}
	if gw != nil {
		defer gw.Close()
	}
	if opts.metricsAddr != "" {
		mln, err := net.Listen("tcp", opts.metricsAddr)
		if err != nil {
			ln.Close()
			return err
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", c.MetricsHandler())
		hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		logger.Info("metrics listening", "addr", mln.Addr().String(), "path", "/metrics")
		go hs.Serve(mln)
		defer hs.Close()
	}
	heapCtx, stopHeap := context.WithCancel(ctx)
	defer stopHeap()
	go returnHeap(heapCtx)
	return serve(ctx, srv, ln, logger)
}

// openCluster is a -cluster-enabled node's topology, from its config file: the
// node's address is -cluster-announce-ip, else -addr's host, at -addr's port (or
// -port). A wildcard host announces 127.0.0.1, which only nodes of one machine reach.
func openCluster(opts options) (*cluster.Topology, error) {
	host, port, err := net.SplitHostPort(opts.addr)
	if err != nil {
		return nil, fmt.Errorf("-cluster-enabled: -addr %q: %v", opts.addr, err)
	}
	if opts.port != 0 {
		port = strconv.Itoa(opts.port)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return nil, fmt.Errorf("-cluster-enabled needs a fixed port, not %q: the other nodes keep it", port)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	if opts.clusterAnnounceIP != "" {
		host = opts.clusterAnnounceIP
	}
	return cluster.Open(cmp.Or(opts.clusterConfigFile, "nodes.conf"), host, p)
}
