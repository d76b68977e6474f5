package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rlserver/rlserver/core"
	"github.com/rlserver/rlserver/gateway"
	"github.com/rlserver/rlserver/httpdesc"
	"github.com/rlserver/rlserver/policy/engine"
	"go.opentelemetry.io/otel/trace"
)

// gatewayOptions are the flags of the gateway fronts (package gateway) and their policy.
type gatewayOptions struct {
	limits     string // policy file or directory; empty: no policies
	rlsAddr    string // Envoy's RLS v3 over gRPC; empty: off
	httpAddr   string // /json, /healthcheck, /rlconfig; empty: off
	rlsTLS     bool   // serve both over TLS with -tls-cert and -tls-key
	headers    bool   // add RateLimit-* headers to each response
	names      gateway.Headers
	shadowMode bool
	trusted    string // -trusted-proxies: whose X-Forwarded-For /check believes
	xds        xdsOptions
	tracing    tracingOptions
}

func gatewayFlags(fs *flag.FlagSet, g *gatewayOptions) {
	fs.StringVar(&g.limits, "limits", "", "policy `path`: a YAML file, or a directory of *.yaml (envoyproxy/ratelimit's format), reloaded when it changes")
	fs.StringVar(&g.rlsAddr, "rls-addr", "", "`host:port` serving Envoy's rate limit service (RLS v3, gRPC) with -limits; empty: off")
	fs.StringVar(&g.httpAddr, "http-addr", "", "`host:port` serving envoyproxy/ratelimit's /json, /healthcheck, /rlconfig and the forward-auth /check; empty: off")
	fs.BoolVar(&g.rlsTLS, "rls-tls", false, "serve -rls-addr and -http-addr over TLS, with -tls-cert and -tls-key")
	fs.BoolVar(&g.headers, "rls-headers", false, "add RateLimit-Limit, -Remaining and -Reset to every RLS response (envoyproxy/ratelimit's LIMIT_RESPONSE_HEADERS_ENABLED)")
	fs.StringVar(&g.names.Limit, "rls-header-limit", "", "`name` of the limit header of -rls-headers; empty: "+gateway.DefaultHeaders.Limit)
	fs.StringVar(&g.names.Remaining, "rls-header-remaining", "", "`name` of the remaining header of -rls-headers; empty: "+gateway.DefaultHeaders.Remaining)
	fs.StringVar(&g.names.Reset, "rls-header-reset", "", "`name` of the reset header of -rls-headers; empty: "+gateway.DefaultHeaders.Reset)
	fs.StringVar(&g.trusted, "trusted-proxies", "", "`CIDR,...` of the proxies whose X-Forwarded-For and X-Real-IP /check believes for remote_address; empty: loopback (127.0.0.0/8,::1); none: no proxy")
	fs.BoolVar(&g.shadowMode, "rls-shadow-mode", false, "answer OK overall whatever the limits, still counting (envoyproxy/ratelimit's SHADOW_MODE)")
	xdsFlags(fs, &g.xds)
	tracingFlags(fs, &g.tracing)
}

// ratelimitEnv sets, from the environment variables an envoyproxy/ratelimit
// Deployment sets, the flags given neither on the command line nor in the config
// file, so the same manifest runs rlserver. A manifest naming a policy directory
// (RUNTIME_ROOT or RUNTIME_SUBDIRECTORY) gets their listeners by default: gRPC on
// 0.0.0.0:8081, HTTP on 0.0.0.0:8080. The variables are listed in docs/gateway.md.
func ratelimitEnv(fs *flag.FlagSet, getenv func(string) string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	set := func(name, value string) error {
		if given[name] || value == "" {
			return nil
		}
		if err := fs.Set(name, value); err != nil {
			return fmt.Errorf("environment: -%s %q: %w", name, value, err)
		}
		return nil
	}
	for _, v := range boolVars {
		if s := getenv(v); s != "" {
			if _, err := strconv.ParseBool(s); err != nil {
				return fmt.Errorf("environment: %s %q is not a boolean (true, false, 1, 0...)", v, s)
			}
		}
	}
	root, sub := getenv("RUNTIME_ROOT"), getenv("RUNTIME_SUBDIRECTORY")
	var fromXDS bool
	switch t := getenv("CONFIG_TYPE"); t {
	case "", "FILE":
	case "GRPC_XDS_SOTW":
		fromXDS = true
	default:
		return fmt.Errorf("environment: CONFIG_TYPE %q: FILE or GRPC_XDS_SOTW", t)
	}
	theirs := root != "" || sub != "" || fromXDS
	var limits string
	if theirs && !fromXDS {
		// Their rule: RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY, watched
		// whatever RUNTIME_WATCH_ROOT says.
		limits = filepath.Join(cmp.Or(root, "/srv/runtime_data/current"), sub, cmp.Or(getenv("RUNTIME_APPDIRECTORY"), "config"))
	}
	hostPort := func(hostVar, portVar, port string) string {
		h, p := getenv(hostVar), getenv(portVar)
		if !theirs && h == "" && p == "" {
			return ""
		}
		return net.JoinHostPort(cmp.Or(h, "0.0.0.0"), cmp.Or(p, port))
	}
	level := strings.ToLower(getenv("LOG_LEVEL"))
	level = cmp.Or(logrusLevels[level], level)
	metrics := ""
	if envBool(getenv("USE_PROMETHEUS")) {
		metrics = cmp.Or(getenv("PROMETHEUS_ADDR"), ":9090")
	}
	tls := ""
	if envBool(getenv("GRPC_SERVER_USE_TLS")) {
		tls = "true"
	}
	for _, kv := range [][2]string{
		{"limits", limits},
		{"rls-addr", hostPort("GRPC_HOST", "GRPC_PORT", "8081")},
		{"http-addr", hostPort("HOST", "PORT", "8080")},
		{"loglevel", level},
		{"rls-headers", boolText(getenv("LIMIT_RESPONSE_HEADERS_ENABLED"))},
		{"rls-header-limit", getenv("LIMIT_LIMIT_HEADER")},
		{"rls-header-remaining", getenv("LIMIT_REMAINING_HEADER")},
		{"rls-header-reset", getenv("LIMIT_RESET_HEADER")},
		{"rls-shadow-mode", boolText(getenv("SHADOW_MODE"))},
		{"rls-tls", tls},
		{"tls-cert", getenv("GRPC_SERVER_TLS_CERT")},
		{"tls-key", getenv("GRPC_SERVER_TLS_KEY")},
		{"tls-ca-cert-file", cmp.Or(getenv("GRPC_CLIENT_TLS_CACERT"), getenv("GRPC_SERVER_TLS_CA_CERT"))},
		{"tls-client-san", getenv("GRPC_CLIENT_TLS_SAN")},
		{"metrics-addr", metrics},
	} {
		if err := set(kv[0], kv[1]); err != nil {
			return err
		}
	}
	if err := setTracingEnv(set, getenv); err != nil {
		return err
	}
	if fromXDS {
		return xdsEnv(set, getenv)
	}
	return nil
}

// xdsEnv sets the -xds-* flags from envoyproxy/ratelimit's CONFIG_GRPC_XDS_*
// variables (the server defaults to theirs, localhost:18000).
func xdsEnv(set func(name, value string) error, getenv func(string) string) error {
	for _, kv := range [][2]string{
		{"xds-server", cmp.Or(getenv("CONFIG_GRPC_XDS_SERVER_URL"), "localhost:18000")},
		{"xds-node-id", getenv("CONFIG_GRPC_XDS_NODE_ID")},
		{"xds-tls", boolText(getenv("CONFIG_GRPC_XDS_SERVER_USE_TLS"))},
		{"xds-tls-cert", getenv("CONFIG_GRPC_XDS_CLIENT_TLS_CERT")},
		{"xds-tls-key", getenv("CONFIG_GRPC_XDS_CLIENT_TLS_KEY")},
		{"xds-tls-ca", getenv("CONFIG_GRPC_XDS_SERVER_TLS_CACERT")},
		{"xds-tls-san", getenv("CONFIG_GRPC_XDS_SERVER_TLS_SAN")},
		{"xds-force-start", boolText(getenv("FORCE_START_WITHOUT_INITIAL_CONFIG"))},
	} {
		if err := set(kv[0], kv[1]); err != nil {
			return err
		}
	}
	return nil
}

// logrusLevels are envoyproxy/ratelimit's log levels (logrus's) that -loglevel
// spells otherwise.
var logrusLevels = map[string]string{"trace": "debug", "fatal": "error", "panic": "error"}

// boolVars are the boolean variables of envoyproxy/ratelimit's that rlserver reads.
// Its envconfig refuses to start on a value strconv.ParseBool does not take, and so
// does ratelimitEnv: read as false, GRPC_SERVER_USE_TLS=yes would serve in clear.
var boolVars = []string{"USE_PROMETHEUS", "GRPC_SERVER_USE_TLS", "LIMIT_RESPONSE_HEADERS_ENABLED", "SHADOW_MODE",
	"CONFIG_GRPC_XDS_SERVER_USE_TLS", "FORCE_START_WITHOUT_INITIAL_CONFIG", "TRACING_ENABLED"}

// envBool reads a boolean as envconfig does (strconv.ParseBool), once boolVars are
// checked; unset is false.
func envBool(s string) bool {
	b, err := strconv.ParseBool(s)
	return err == nil && b
}

// boolText is s as a flag value, empty when unset (not given).
func boolText(s string) string {
	if b, err := strconv.ParseBool(s); err == nil {
		return strconv.FormatBool(b)
	}
	return ""
}

// startGateway starts the fronts g asks for on c's store, clock and role, deciding
// with eng (nil: no policy, every domain unknown); nil when g asks for none.
func startGateway(c *core.Core, eng *engine.Engine, g gatewayOptions, tp trace.TracerProvider, logger *slog.Logger) (*gateway.Server, error) {
	if g.rlsAddr == "" && g.httpAddr == "" {
		return nil, nil
	}
	if eng == nil {
		eng = engine.New(c.Store(), nil)
	}
	cfg := gateway.Config{Decider: eng, Now: c.Now, Serving: c.IsPrimary, Logger: logger, ShadowMode: g.shadowMode, TracerProvider: tp,
		TraceSampling: g.tracing.cfg.SamplingRate, Registerer: c.Registry()}
	if g.headers {
		cfg.Headers = gateway.Headers{
			Limit:     cmp.Or(g.names.Limit, gateway.DefaultHeaders.Limit),
			Remaining: cmp.Or(g.names.Remaining, gateway.DefaultHeaders.Remaining),
			Reset:     cmp.Or(g.names.Reset, gateway.DefaultHeaders.Reset),
		}
	}
	var err error
	switch g.trusted {
	case "": // rls's default: loopback
	case "none":
		cfg.TrustedProxies = []netip.Prefix{}
	default:
		if cfg.TrustedProxies, err = httpdesc.ParsePrefixes(g.trusted); err != nil {
			return nil, fmt.Errorf("-trusted-proxies: %w", err)
		}
	}
	if g.rlsTLS {
		if cfg.TLS = c.TLSConfig(); cfg.TLS == nil {
			return nil, errors.New("-rls-tls needs -tls-cert and -tls-key")
		}
	}
	front, err := gateway.New(cfg)
	if err != nil {
		return nil, err
	}
	for _, l := range []struct {
		addr, what string
		serve      func(net.Listener) error
	}{{g.rlsAddr, "RLS gRPC", front.ServeGRPC}, {g.httpAddr, "RLS HTTP", front.ServeHTTP}} {
		if l.addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			front.Close()
			return nil, err
		}
		logger.Info(l.what+" listening", "addr", ln.Addr().String(), "limits", g.limits)
		go func() {
			if err := l.serve(ln); err != nil {
				logger.Error(l.what+" stopped", "err", err)
			}
		}()
	}
	return front, nil
}
