package middleware

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/httpdesc"
	"github.com/rlserver/rlserver/shed"
)

// Defaults applied by New to zero Config fields.
const (
	// DefaultTimeout is the budget of all of a request's limiter calls.
	DefaultTimeout = 50 * time.Millisecond
	// DefaultLogInterval is the least time between two log lines about failures.
	DefaultLogInterval = 10 * time.Second
	// DefaultPrefix starts every key the middleware makes.
	DefaultPrefix = "rl:"
)

// DefaultHealthPaths returns the paths that bypass the limiter when Config.HealthPaths
// is nil: "/healthz", "/readyz", "/livez" and "/health". A new slice each call, so
// that no importer can change what every other Limiter bypasses.
func DefaultHealthPaths() []string { return []string{"/healthz", "/readyz", "/livez", "/health"} }

// Dimension is one rate limit applied to requests, keyed by what By says. Its keys are
// Config.Prefix, the name, ':', then the parts in the order user, IP, route, joined
// by '|' ('|' and '\' within a part escaped by '\'): rl:user:alice,
// rl:search:203.0.113.7|GET /search. redis-cli finds them with SCAN MATCH 'rl:user:*'.
type Dimension struct {
	// Name names the policy in the RateLimit headers and starts the key:
	// letters, digits, '_', '-' and '.', unique within a Config.
	Name string
	// By is what the key is made of, e.g. ByUser or ByIP|ByRoute.
	By Keys
	// Limit is the limit of each key.
	Limit client.Limit
	// Optional dimensions apply only where Limiter.With names them (a route's own
	// limit); the others to every request.
	Optional bool
}

// Concurrency limits the requests in flight per key, keyed by what By says, as a
// Dimension's keys are (its Name must differ from theirs).
type Concurrency struct {
	// Name starts the key: letters, digits, '_', '-' and '.'.
	Name string
	// By is what the key is made of, e.g. ByUser or ByIP.
	By Keys
	// Limit is the most requests of one key served at once.
	Limit int
	// Lease is the longest a place outlives its request's instance (a crash): a
	// whole number of milliseconds, a few seconds at most. While the request runs the
	// middleware renews its lease every Renew, each time to end when the handler is
	// expected to return (a running mean of its last requests' times, at least 2
	// Renews away, at most Lease): a refused request is told when the earliest place
	// will really free, not the lease's length. The mean is kept per Handler call:
	// wrap each slow route on its own, not a whole ServeMux, for a precise wait.
	Lease time.Duration
	// Renew is the time between renewals, at most Lease; 0 means DefaultRenew, or
	// Lease/2 for a Lease under 2 s. Each renewal is one call (RL.RENEW).
	Renew time.Duration
	// Optional limits apply only where Limiter.With names them; the others to every
	// request.
	Optional bool
}

// Config configures a Limiter. Client is required, and Dimensions, Concurrency or Policy;
// every other zero field takes its default.
type Config struct {
	// Client makes the calls, on any backend.
	Client *client.Client
	// Dimensions are the rate limits, all decided at once. Their order is that of the
	// RateLimit-Policy and RateLimit items.
	Dimensions []Dimension
	// Concurrency, if not nil, limits the requests in flight per key.
	Concurrency *Concurrency
	// Priorities, with Priority, sorts requests into the shared limiter's priority
	// classes (client.Priorities: a policy's names and shares): each Dimension's limit,
	// and Concurrency's places, leave a request the share its class keeps for the
	// classes above it, so that critical requests still find room when sheddable ones
	// have used the rest. A request refused for want of its reserve gets the 429 of any
	// refusal, with the time until it fits.
	Priorities client.Priorities
	// Priority names a request's class (from a header, its route, a function of
	// both): a class of Priorities, and a priority of Shedder. A name that is none of
	// them ("" included) is the lowest class, so that no request rises by a name the
	// service does not know. Required with Priorities.
	Priority func(*http.Request) string
	// Shedder, if not nil, sheds requests before any call to the limiter: by
	// Priority's name among its priorities (its Default without Priority), a request
	// queues briefly or gets the shedder's 503 (shed.Handler), its limits untouched.
	// Health checks (HealthPaths) bypass it as they bypass the limits; a Limiter's
	// Stats count only the requests the Shedder let through (shed.Stats the rest).
	Shedder *shed.Shedder
	// User returns the request's user key ("" for none): required if a dimension is
	// ByUser. It runs before your handlers, so it reads what the request carries (a
	// verified token, an API key), not what later middleware would set.
	User func(*http.Request) string
	// Route returns the request's route; nil means the ServeMux pattern (r.Pattern,
	// set when the Limiter wraps a handler registered on a ServeMux) or else the
	// method and path. Keep its answers few: each one is a key.
	Route func(*http.Request) string
	// Policy, if not nil, takes the limits from the policy rlserver runs with
	// (-limits), as a gateway's /check does, instead of Dimensions and Concurrency: see
	// Policy. Client must then be on rlserver (client.New), and Fallback open or closed.
	Policy *Policy
	// Slicer, if not nil, decides the Dimensions, or the Policy, in-process from
	// slices of their quota (client.Slicer, made with Client.NewSlicer on this
	// Config's Client), instead of a call to the limiter per request: a hot key costs
	// a round trip per slice, and never admits past its limit across replicas. The
	// dimensions are still decided all or nothing. With Policy, each set of
	// descriptors a request names is resolved (Client.ResolvePolicy: RL.RESOLVE) to
	// the rules and state keys RL.POLICY would charge, kept a second (a policy
	// reloaded at the server applies here within it) for up to 4096 sets, and
	// decided from slices of those keys: the same decisions and headers as RL.POLICY,
	// all or nothing for an all_or_nothing domain, shadow and quota rules never
	// refusing; a set with a rule a Slicer cannot take (Log, Leaky, a window finer
	// than a millisecond) is decided by RL.POLICY. Unlike RL.POLICY, a refused request
	// spends nothing of a fixed window, and the server's per-rule metrics do not count
	// these decisions (the Slicer's SliceStats do). Its owner closes it, giving back
	// what it holds.
	Slicer *client.Slicer
	// TrustedProxies are the CIDRs (or single addresses) of the proxies whose
	// X-Forwarded-For and X-Real-IP are believed (Limiter.ClientIP); nil means none,
	// and the peer's address is the client's.
	TrustedProxies []string
	// HealthPaths bypass the limiter, matched exactly against the URL path; nil means
	// DefaultHealthPaths(), an empty slice none.
	HealthPaths []string
	// Timeout is the budget of all of a request's calls; 0 means DefaultTimeout. It is
	// their context's deadline, and so their only budget: the Client's own
	// Options.Timeout applies to calls without a deadline, not to these.
	Timeout time.Duration
	// Fallback is what happens when the limiter fails: FallbackOpen (the default),
	// FallbackClosed or FallbackLocal. In every mode a circuit breaker (the Client's
	// Fallback's, or else a client.Breaker with the defaults) stops calling a limiter
	// that failed client.DefaultFailures times in a row, so that an outage costs one
	// timeout per pause, not one per request.
	Fallback Fallback
	// FailClosed is Fallback: FallbackClosed, kept for the configurations that set it.
	FailClosed bool
	// Name tells this Limiter's log lines from another's (their attribute "limiter").
	Name string
	// Logger receives the failure lines; nil means slog.Default().
	Logger *slog.Logger
	// LogInterval is the least time between two failure lines; 0 means DefaultLogInterval.
	LogInterval time.Duration
	// Prefix starts every key, so limiter keys stay apart from others on a shared
	// Redis; "" means DefaultPrefix. On a Redis Cluster with more than one dimension,
	// make it a hash tag such as "{rl}:": one call decides every dimension, and its
	// keys must share a slot (the limiter's keys then all live on one node).
	Prefix string
}

// Fallback is what a Limiter does with a request when the limiter fails.
type Fallback uint8

// The fallbacks.
const (
	FallbackOpen   Fallback = iota // serve the request, unlimited
	FallbackClosed                 // refuse it: 429, a wait of a second (spread)
	FallbackLocal                  // decide it in-process at this replica's share (client.Options.Fallback)
)

// String is the fallback's name: "open", "closed" or "local".
func (f Fallback) String() string {
	switch f {
	case FallbackOpen:
		return "open"
	case FallbackClosed:
		return "closed"
	case FallbackLocal:
		return "local"
	}
	return fmt.Sprintf("Fallback(%d)", uint8(f))
}

// Stats counts the requests a Limiter has seen. Every request is in exactly one of the
// first five counts.
type Stats struct {
	Allowed  uint64 // passed on: every dimension that applies allowed it, and it had a place
	Limited  uint64 // answered 429 because a dimension or the policy denied it (400: rlserver refused its descriptors)
	Busy     uint64 // answered 429 because its Concurrency key had no place free
	Bypassed uint64 // health checks, not limited
	Failed   uint64 // the limiter failed or timed out: served (fail open) or 429 (fail closed)
	// Degraded counts the requests among Allowed, Limited and Busy that were decided
	// in-process because the limiter failed (FallbackLocal).
	Degraded uint64
}

// New validates cfg and returns a Limiter.
func New(cfg Config) (*Limiter, error) {
	if cfg.Client == nil {
		return nil, errors.New("middleware: Config.Client is required")
	}
	if len(cfg.Dimensions) == 0 && cfg.Concurrency == nil && cfg.Policy == nil {
		return nil, errors.New("middleware: Config.Dimensions is empty, and Config.Concurrency and Config.Policy nil: nothing to limit")
	}
	l := &limiterState{
		client:      cfg.Client,
		user:        cfg.User,
		route:       cfg.Route,
		health:      map[string]bool{},
		timeout:     orDefault(cfg.Timeout, DefaultTimeout),
		fallback:    cfg.Fallback,
		log:         cfg.Logger,
		name:        cfg.Name,
		logInterval: orDefault(cfg.LogInterval, DefaultLogInterval),
		now:         time.Now,
		sleep:       sleep,
	}
	if cfg.Timeout < 0 || cfg.LogInterval < 0 {
		return nil, errors.New("middleware: Config.Timeout and Config.LogInterval must not be negative")
	}
	l.slicer = cfg.Slicer
	if cfg.Policy != nil {
		var err error
		if l.policy, err = newPolicyRules(cfg); err != nil {
			return nil, err
		}
	}
	switch {
	case cfg.FailClosed && cfg.Fallback == FallbackOpen:
		l.fallback = FallbackClosed
	case cfg.FailClosed && cfg.Fallback != FallbackClosed:
		return nil, fmt.Errorf("middleware: Config.FailClosed contradicts Config.Fallback %v", cfg.Fallback)
	case cfg.Fallback > FallbackLocal:
		return nil, fmt.Errorf("middleware: Config.Fallback %v: want FallbackOpen, FallbackClosed or FallbackLocal", cfg.Fallback)
	case cfg.Fallback == FallbackLocal && !cfg.Client.HasFallback():
		return nil, errors.New("middleware: Config.Fallback is FallbackLocal, but the Client has no client.Options.Fallback to decide locally with")
	}
	if l.log == nil {
		l.log = slog.Default()
	}
	if !cfg.Client.HasFallback() {
		l.breaker, _ = client.NewBreaker(client.Fallback{}) // the defaults are valid
	}
	if l.route == nil {
		l.route = defaultRoute
	}
	prefix := cfg.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if len(cfg.Dimensions) > maxDimensions {
		return nil, fmt.Errorf("middleware: %d dimensions, at most %d: one call decides them all", len(cfg.Dimensions), maxDimensions)
	}
	seen := map[string]bool{}
	for _, d := range cfg.Dimensions {
		if err := checkKeyed("dimension", d.Name, d.By, seen, cfg.User != nil); err != nil {
			return nil, err
		}
		if err := d.Limit.Validate(); err != nil {
			return nil, fmt.Errorf("middleware: dimension %q: %w", d.Name, err)
		}
		l.every = append(l.every, dimension{Dimension: d, prefix: prefix + d.Name + ":",
			policy: policyItem(d), item: `"` + d.Name + `";r=`})
	}
	if c := cfg.Concurrency; c != nil {
		if err := checkKeyed("concurrency", c.Name, c.By, seen, cfg.User != nil); err != nil {
			return nil, err
		}
		var err error
		if l.everyConc, err = newConcurrency(*c, prefix); err != nil {
			return nil, err
		}
	}
	for _, p := range cfg.TrustedProxies {
		cidr, err := httpdesc.ParsePrefix(p)
		if err != nil {
			return nil, fmt.Errorf("middleware: %w", err)
		}
		l.trusted = append(l.trusted, cidr)
	}
	health := cfg.HealthPaths
	if health == nil {
		health = DefaultHealthPaths()
	}
	for _, p := range health {
		l.health[p] = true
	}
	l.healthPaths, l.shedder = health, cfg.Shedder
	if err := l.setPriorities(cfg); err != nil {
		return nil, err
	}
	lim := &Limiter{limiterState: l}
	for _, d := range l.every {
		if !d.Optional {
			lim.add(d)
		}
	}
	if l.everyConc != nil && !l.everyConc.Optional {
		lim.conc = l.everyConc
		lim.needs |= lim.conc.By
	}
	return lim, nil
}

// add makes d one of the dimensions l decides.
func (l *Limiter) add(d dimension) {
	l.dims = append(l.dims, d)
	l.needs |= d.By
}

// With returns a Limiter that decides, in the one call, the dimensions l decides and
// the Optional dimensions (or Optional concurrency limit) named: a route's own limits,
//
//	report, err := lim.With("report")
//	mux.Handle("GET /report", report.Handler(reportHandler))
//
// so that a request is answered once, by whichever limit refuses it, rather than by
// two Limiters stacked. The new Limiter shares l's Client, breaker, Stats and log
// lines. A name that is no Optional dimension or concurrency limit of the Config, or
// one l applies already, is an error.
func (l *Limiter) With(names ...string) (*Limiter, error) {
	if l.policy != nil {
		return nil, errors.New("middleware: With: a Limiter on Config.Policy takes its limits from rlserver's policy")
	}
	w := &Limiter{limiterState: l.limiterState, dims: slices.Clone(l.dims), conc: l.conc, needs: l.needs}
	for _, name := range names {
		if c := l.everyConc; c != nil && c.Name == name {
			if !c.Optional || w.conc != nil {
				return nil, fmt.Errorf("middleware: With(%q): the concurrency limit applies here already", name)
			}
			w.conc = c
			w.needs |= c.By
			continue
		}
		i := slices.IndexFunc(l.every, func(d dimension) bool { return d.Name == name })
		switch {
		case i < 0:
			return nil, fmt.Errorf("middleware: With(%q): no dimension or concurrency limit of that name", name)
		case !l.every[i].Optional || slices.ContainsFunc(w.dims, func(d dimension) bool { return d.Name == name }):
			return nil, fmt.Errorf("middleware: With(%q): the dimension applies here already", name)
		}
		w.add(l.every[i])
	}
	return w, nil
}

// Bounds of the configuration: RL.ALL's rules, RL.ACQUIRE's lease_ms.
const (
	maxDimensions = 64
	maxLease      = 365 * 24 * time.Hour
)

// checkKeyed checks the name and By of a dimension or of the concurrency limit, and
// records the name in seen: names start the keys, so two alike would share keys.
func checkKeyed(what, name string, by Keys, seen map[string]bool, haveUser bool) error {
	switch {
	case !validName(name):
		return fmt.Errorf("middleware: %s name %q: use letters, digits, '_', '-' and '.'", what, name)
	case seen[name]:
		return fmt.Errorf("middleware: two dimensions are named %q", name)
	case by == 0 || by&^(ByUser|ByIP|ByRoute) != 0:
		return fmt.Errorf("middleware: %s %q: By must combine ByUser, ByIP and ByRoute, got %d", what, name, by)
	case by&ByUser != 0 && !haveUser:
		return fmt.Errorf("middleware: %s %q is ByUser: Config.User is required", what, name)
	}
	seen[name] = true
	return nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// validName reports whether s is a dimension name: it goes into a structured-field
// string and a key unescaped.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
