// Package middleware rate-limits net/http handlers with package client, and refuses
// the way the lesson teaches: 429, never a 5xx, with the time to come back.
//
// A request is checked against several dimensions, each its own limit and its own
// key: the user (a function of yours: most precise, but a login endpoint has no user
// yet), the client IP (protects public endpoints; X-Forwarded-For is read only from
// trusted proxies), the route (protects what is expensive), or a combination. All of
// them are decided in one call, all or nothing (client.AllowAll, RL.ALL): a request
// is served only if every dimension admits it, and a request that one dimension
// refuses consumes nothing in the others. (On a Redis Cluster, that call's keys must
// share a slot: see Config.Prefix.)
//
// Config.Concurrency adds a limit on the requests in flight per key (client.Acquire,
// RL.ACQUIRE): a request the rate limits admit takes a lease, and gives it back when
// the handler returns (or panics). A lease ends by itself after Concurrency.Lease,
// so an instance that dies mid-request does not keep its places. When every place is
// taken the request gets a 429 whose body says "concurrency_limited", with the time
// until the earliest lease ends. The rate dimensions have consumed the request's
// units by then: RL.ALL cannot take a lease.
//
// A denied request gets:
//
//	HTTP/1.1 429 Too Many Requests
//	Retry-After: 1                          seconds, rounded up: never too early
//	X-RateLimit-Limit: 500
//	X-RateLimit-Remaining: 0
//	X-RateLimit-Reset: 1                    seconds until the quota is full again, rounded up
//	RateLimit-Policy: "user";q=500;w=1
//	RateLimit: "user";r=0;t=1
//	Content-Type: application/json
//
//	{"error":"rate_limited","retryAfterMs":2}
//
// The body holds the exact wait in ms: Retry-After cannot say less than a second, and
// clients all told "1" would all come back at the same instant. The X-RateLimit
// fields are the denying dimension's (of several, the one with the longest wait: the
// request passes only when all admit). An allowed request carries the same
// informational headers, those of its most restrictive dimension (the least
// remaining). RateLimit-Policy and RateLimit follow the IETF draft
// (draft-ietf-httpapi-ratelimit-headers-11, structured fields): one item per dimension,
// named by the dimension, with q the limit's quota (client.Limit.Quota) and w its
// window in seconds (left out when the window is not whole seconds: the field has no
// finer unit); r the remaining quota and t the seconds until it is full again, or,
// for a dimension that denied, until the request may be retried, as the draft asks
// (Retry-After is never earlier than the end of t). On a denied request, a dimension
// that admitted shows the r it would have left, had the request passed.
//
// A Leaky dimension shapes rather than refuses: an allowed request waits its turn
// (client.Result.RetryAfter) before the handler runs, and a client that leaves
// meanwhile is not served. It holds its concurrency lease while it waits.
//
// Health checks bypass the limiter (Config.HealthPaths): a limiter that sheds them gets
// the node pulled from the load balancer, its load moved to the others, and so on.
//
// When the limiter fails (an error, or no answer within Config.Timeout, 50 ms by
// default), Config.Fallback decides. FallbackOpen (the default) serves the request as
// if allowed. FallbackClosed refuses it with 429, Retry-After: 1 and the same body
// (retryAfterMs 1000), without X-RateLimit fields, there being no figures to give.
// Not 503: that would tell the load balancer this node is sick, when it is the shared
// limiter that is. FallbackLocal goes on limiting: the Client (made with
// client.Options.Fallback) decides in-process at this replica's share of each limit,
// and the request is answered as any other. Failures are counted in Stats and logged
// at most once per Config.LogInterval, with the count since the last line: a dead
// limiter under load must not become a flood of log lines; so are local decisions. A
// request that fails open is served without a concurrency lease.
package middleware

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/client"
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

// DefaultHealthPaths are the paths that bypass the limiter when Config.HealthPaths is nil.
var DefaultHealthPaths = []string{"/healthz", "/readyz", "/livez", "/health"}

// Keys says what a dimension's key is made of: one or more of ByUser, ByIP and
// ByRoute, combined with |.
type Keys uint8

// The parts of a key.
const (
	// ByUser is Config.User's answer for the request. A request it answers "" for
	// (anonymous) skips the dimension.
	ByUser Keys = 1 << iota
	// ByIP is the client's IP address, as Limiter.ClientIP finds it.
	ByIP
	// ByRoute is Config.Route's answer for the request.
	ByRoute
)

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
	// Lease is how long a request's place lasts if it is never given back (its
	// instance died): a whole number of milliseconds, longer than the slowest request.
	// A request that runs longer is still served, but its place may be taken.
	Lease time.Duration
}

// Config configures a Limiter. Client is required, and Dimensions or Concurrency;
// every other zero field takes its default.
type Config struct {
	// Client makes the calls, on any backend.
	Client *client.Client
	// Dimensions are the rate limits, all decided at once. Their order is that of the
	// RateLimit-Policy and RateLimit items.
	Dimensions []Dimension
	// Concurrency, if not nil, limits the requests in flight per key.
	Concurrency *Concurrency
	// User returns the request's user key ("" for none): required if a dimension is
	// ByUser. It runs before your handlers, so it reads what the request carries (a
	// verified token, an API key), not what later middleware would set.
	User func(*http.Request) string
	// Route returns the request's route; nil means the ServeMux pattern (r.Pattern,
	// set when the Limiter wraps a handler registered on a ServeMux) or else the
	// method and path. Keep its answers few: each one is a key.
	Route func(*http.Request) string
	// TrustedProxies are the CIDRs (or single addresses) of the proxies whose
	// X-Forwarded-For is believed; nil means none, and the peer's address is the
	// client's.
	TrustedProxies []string
	// HealthPaths bypass the limiter, matched exactly against the URL path; nil means
	// DefaultHealthPaths, an empty slice none.
	HealthPaths []string
	// Timeout is the budget of all of a request's calls; 0 means DefaultTimeout.
	Timeout time.Duration
	// Fallback is what happens when the limiter fails: FallbackOpen (the default),
	// FallbackClosed or FallbackLocal.
	Fallback Fallback
	// FailClosed is Fallback: FallbackClosed, kept for the configurations that set it.
	FailClosed bool
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
	FallbackClosed                 // refuse it: 429, Retry-After: 1
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
	Limited  uint64 // answered 429 because a dimension denied it
	Busy     uint64 // answered 429 because its Concurrency key had no place free
	Bypassed uint64 // health checks, not limited
	Failed   uint64 // the limiter failed or timed out: served (fail open) or 429 (fail closed)
	// Degraded counts the requests among Allowed, Limited and Busy that were decided
	// in-process because the limiter failed (FallbackLocal).
	Degraded uint64
}

// Limiter is the middleware: wrap handlers with Handler. It is safe for concurrent use.
type Limiter struct {
	client      *client.Client
	dims        []dimension
	conc        *concurrency // nil without Config.Concurrency
	needs       Keys
	user        func(*http.Request) string
	route       func(*http.Request) string
	trusted     []netip.Prefix
	health      map[string]bool
	timeout     time.Duration
	fallback    Fallback
	log         *slog.Logger
	logInterval time.Duration

	// Replaced by tests, which must not sleep.
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error

	allowed, limited, busy, bypassed, failed, degraded atomic.Uint64
	failedLog, degradedLog                             logThrottle
}

// logThrottle spaces out the lines about one kind of event: at most one per interval.
type logThrottle struct {
	last   atomic.Int64  // unix ns of the last line, 0 before any
	logged atomic.Uint64 // the events' total as of the last line
}

// due reports whether a line is due at now (unix ns) with total events so far, and
// how many came since the last line: the first event is logged at once, the next
// ones within the interval are counted and reported by the next line.
func (t *logThrottle) due(now int64, total uint64, interval time.Duration) (uint64, bool) {
	last := t.last.Load()
	if last != 0 && now-last < int64(interval) || !t.last.CompareAndSwap(last, now) {
		return 0, false
	}
	return total - t.logged.Swap(total), true
}

// concurrency is Config.Concurrency with its key prefix made once.
type concurrency struct {
	Concurrency
	prefix string // Config.Prefix + Name + ":"
}

// dimension is a Dimension with its header text made once.
type dimension struct {
	Dimension
	prefix string // Config.Prefix + Name + ":"
	policy string // its RateLimit-Policy item
	item   string // the start of its RateLimit item: "name";r=
}

// New validates cfg and returns a Limiter.
func New(cfg Config) (*Limiter, error) {
	if cfg.Client == nil {
		return nil, errors.New("middleware: Config.Client is required")
	}
	if len(cfg.Dimensions) == 0 && cfg.Concurrency == nil {
		return nil, errors.New("middleware: Config.Dimensions is empty and Config.Concurrency nil: nothing to limit")
	}
	l := &Limiter{
		client:      cfg.Client,
		user:        cfg.User,
		route:       cfg.Route,
		health:      map[string]bool{},
		timeout:     orDefault(cfg.Timeout, DefaultTimeout),
		fallback:    cfg.Fallback,
		log:         cfg.Logger,
		logInterval: orDefault(cfg.LogInterval, DefaultLogInterval),
		now:         time.Now,
		sleep:       sleep,
	}
	if cfg.Timeout < 0 || cfg.LogInterval < 0 {
		return nil, errors.New("middleware: Config.Timeout and Config.LogInterval must not be negative")
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
		l.needs |= d.By
		l.dims = append(l.dims, dimension{Dimension: d, prefix: prefix + d.Name + ":",
			policy: policyItem(d), item: `"` + d.Name + `";r=`})
	}
	if c := cfg.Concurrency; c != nil {
		if err := checkKeyed("concurrency", c.Name, c.By, seen, cfg.User != nil); err != nil {
			return nil, err
		}
		switch {
		case c.Limit < 1:
			return nil, fmt.Errorf("middleware: concurrency %q: Limit must be at least 1, got %d", c.Name, c.Limit)
		case c.Lease < time.Millisecond || c.Lease > maxLease || c.Lease%time.Millisecond != 0:
			return nil, fmt.Errorf("middleware: concurrency %q: Lease must be a whole number of milliseconds from 1ms to %v, got %v",
				c.Name, maxLease, c.Lease)
		}
		l.needs |= c.By
		l.conc = &concurrency{Concurrency: *c, prefix: prefix + c.Name + ":"}
	}
	for _, p := range cfg.TrustedProxies {
		cidr, err := parsePrefix(p)
		if err != nil {
			return nil, fmt.Errorf("middleware: trusted proxy %q: not a CIDR or an IP address", p)
		}
		l.trusted = append(l.trusted, cidr)
	}
	health := cfg.HealthPaths
	if health == nil {
		health = DefaultHealthPaths
	}
	for _, p := range health {
		l.health[p] = true
	}
	return l, nil
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

func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return p.Masked(), err
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// policyItem is d's RateLimit-Policy item: "name";q=quota[;w=seconds].
func policyItem(d Dimension) string {
	n, per := d.Limit.Quota()
	item := `"` + d.Name + `";q=` + strconv.Itoa(n)
	if per%time.Second == 0 {
		item += ";w=" + strconv.FormatInt(int64(per/time.Second), 10)
	}
	return item
}

func defaultRoute(r *http.Request) string {
	if r.Pattern != "" {
		return r.Pattern
	}
	return r.Method + " " + r.URL.Path
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stats returns the counts so far.
func (l *Limiter) Stats() Stats {
	return Stats{Allowed: l.allowed.Load(), Limited: l.limited.Load(), Busy: l.busy.Load(), Bypassed: l.bypassed.Load(),
		Failed: l.failed.Load(), Degraded: l.degraded.Load()}
}

// Handler returns next behind the limiter.
func (l *Limiter) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { l.serve(w, r, next) })
}

// decided is one dimension's answer to a request.
type decided struct {
	dim *dimension
	res client.Result
}

func (l *Limiter) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if l.health[r.URL.Path] {
		l.bypassed.Add(1)
		next.ServeHTTP(w, r)
		return
	}
	var user, ip, route string
	if l.needs&ByUser != 0 {
		user = l.user(r)
	}
	if l.needs&ByIP != 0 {
		ip = l.ClientIP(r).String()
	}
	if l.needs&ByRoute != 0 {
		route = l.route(r)
	}

	// Every dimension with a key applies, is announced in RateLimit-Policy, and is
	// decided in the one call.
	var applies []*dimension
	var rules []client.Rule
	var policies []string
	for i := range l.dims {
		d := &l.dims[i]
		if key, ok := makeKey(d.prefix, d.By, user, ip, route); ok {
			applies = append(applies, d)
			rules = append(rules, client.Rule{Key: key, Limit: d.Limit})
			policies = append(policies, d.policy)
		}
	}

	ctx, cancel := context.WithTimeout(r.Context(), l.timeout)
	defer cancel()
	var answers []decided
	var failure error
	degraded := false
	if len(rules) > 0 {
		all, err := l.client.AllowAll(ctx, rules...)
		switch {
		case err != nil:
			failure = fmt.Errorf("dimensions %s: %w", names(applies), err)
		case all.Degraded && l.fallback != FallbackLocal:
			// The Client decided locally, but this Limiter fails open or closed.
			failure = fmt.Errorf("dimensions %s: %w", names(applies), client.ErrUnavailable)
		default:
			degraded = all.Degraded
			for i, res := range all.Results {
				answers = append(answers, decided{applies[i], res})
			}
		}
	}

	h := w.Header()
	if degraded {
		l.decidedLocally(r)
	}
	if failure != nil {
		l.fail(r, failure)
		if l.fallback == FallbackClosed {
			h.Set("Retry-After", "1")
			writeDenied(w, "rate_limited", time.Second)
			return
		}
	}
	if denied, ok := longestDenial(answers); ok {
		l.limited.Add(1)
		setHeaders(h, policies, answers, denied)
		h.Set("Retry-After", strconv.FormatInt(max(1, ceilDiv(denied.res.RetryAfter, time.Second)), 10))
		writeDenied(w, "rate_limited", denied.res.RetryAfter)
		return
	}
	var wait time.Duration
	if len(answers) > 0 {
		setHeaders(h, policies, answers, mostRestrictive(answers))
		// A Leaky dimension shapes: an allowed request waits its turn in the queue.
		for _, a := range answers {
			wait = max(wait, a.res.RetryAfter)
		}
	}
	failed := failure != nil // and served: fail open
	if l.conc != nil && !failed {
		var lease *client.Lease
		var answered bool
		if lease, failed, answered = l.acquire(ctx, w, r, user, ip, route, degraded); answered {
			return
		}
		// Given back however the handler ends, a panic included, on a context of its
		// own: the request's may be done. A failed release is not retried, nor
		// counted (the request already is): the lease ends by itself at its deadline.
		defer func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), l.timeout)
			defer cancel()
			lease.Release(ctx)
		}()
	}
	cancel() // the limiter's calls are done: no timer through the handler
	if !failed {
		l.allowed.Add(1)
	}
	if wait > 0 && l.sleep(r.Context(), wait) != nil {
		return // the client left while waiting
	}
	next.ServeHTTP(w, r)
}

// acquire takes the request's concurrency lease, or answers the request: 429 when
// the key has no place, or the failure mode's answer. failed reports a failure,
// counted and logged; answered that the request got its answer. lease is nil when
// there is none to give back (no key, a failure): Release does nothing on nil.
func (l *Limiter) acquire(ctx context.Context, w http.ResponseWriter, r *http.Request, user, ip, route string, degraded bool) (lease *client.Lease, failed, answered bool) {
	key, ok := makeKey(l.conc.prefix, l.conc.By, user, ip, route)
	if !ok {
		return nil, false, false
	}
	lease, err := l.client.Acquire(ctx, key, l.conc.Limit, l.conc.Lease)
	if err == nil && lease.Degraded && l.fallback != FallbackLocal {
		lease.Release(ctx)
		err = client.ErrUnavailable // decided locally, but this Limiter fails open or closed
	}
	if err == nil && lease.Degraded && !degraded { // the rate limits' call has counted it already
		l.decidedLocally(r)
	}
	h := w.Header()
	switch {
	case err != nil:
		l.fail(r, fmt.Errorf("concurrency %q: %w", l.conc.Name, err))
		closed := l.fallback == FallbackClosed
		if closed {
			h.Set("Retry-After", "1")
			writeDenied(w, "rate_limited", time.Second)
		}
		return nil, true, closed
	case !lease.Acquired:
		l.busy.Add(1)
		h.Set("Retry-After", strconv.FormatInt(max(1, ceilDiv(lease.RetryAfter, time.Second)), 10))
		writeDenied(w, "concurrency_limited", lease.RetryAfter)
		return nil, false, true
	}
	return lease, false, false
}

// names lists the dimensions' names, quoted, for a failure's message.
func names(dims []*dimension) string {
	var b strings.Builder
	for i, d := range dims {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(d.Name))
	}
	return b.String()
}

// longestDenial is, of the answers that denied, the one with the longest wait: the
// request passes only once every dimension admits it. The first of equals.
func longestDenial(answers []decided) (decided, bool) {
	var denied decided
	found := false
	for _, a := range answers {
		if !a.res.Allowed && (!found || a.res.RetryAfter > denied.res.RetryAfter) {
			denied, found = a, true
		}
	}
	return denied, found
}

// makeKey is the key of prefix and the parts by says, for a request with these parts;
// false if it lacks one (no user).
func makeKey(prefix string, by Keys, user, ip, route string) (string, bool) {
	if by&ByUser != 0 && user == "" {
		return "", false
	}
	var b strings.Builder
	b.WriteString(prefix)
	sep := false
	for _, part := range []struct {
		by    Keys
		value string
	}{{ByUser, user}, {ByIP, ip}, {ByRoute, route}} {
		if by&part.by == 0 {
			continue
		}
		if sep {
			b.WriteByte('|')
		}
		sep = true
		writeEscaped(&b, part.value)
	}
	return b.String(), true
}

// writeEscaped writes s with '|' and '\' escaped by '\', so that a key's parts never
// run into each other ("a|b" + "c" against "a" + "b|c").
func writeEscaped(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		if s[i] == '|' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
}

// mostRestrictive is the answer with the least remaining; of equals, the one longest
// to reset.
func mostRestrictive(answers []decided) decided {
	best := answers[0]
	for _, a := range answers[1:] {
		if a.res.Remaining < best.res.Remaining || a.res.Remaining == best.res.Remaining && a.res.ResetAfter > best.res.ResetAfter {
			best = a
		}
	}
	return best
}

// setHeaders writes the informational headers: X-RateLimit-* of shown, and the IETF
// fields of every dimension that applies (RateLimit-Policy, RateLimit).
func setHeaders(h http.Header, policies []string, answers []decided, shown decided) {
	h.Set("X-RateLimit-Limit", strconv.Itoa(shown.res.Limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(shown.res.Remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(ceilDiv(shown.res.ResetAfter, time.Second), 10))
	h.Set("RateLimit-Policy", strings.Join(policies, ", "))
	var b strings.Builder
	for i, a := range answers {
		if i > 0 {
			b.WriteString(", ")
		}
		t := a.res.ResetAfter
		if !a.res.Allowed {
			t = max(time.Second, a.res.RetryAfter) // as Retry-After
		}
		b.WriteString(a.dim.item)
		b.WriteString(strconv.Itoa(a.res.Remaining))
		b.WriteString(";t=")
		b.WriteString(strconv.FormatInt(ceilDiv(t, time.Second), 10))
	}
	h.Set("RateLimit", b.String())
}

// writeDenied writes the 429 and its body, with the error code ("rate_limited",
// "concurrency_limited") and retry rounded up to the ms.
func writeDenied(w http.ResponseWriter, code string, retry time.Duration) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusTooManyRequests)
	body := append([]byte(`{"error":"`+code+`","retryAfterMs":`), strconv.FormatInt(ceilDiv(retry, time.Millisecond), 10)...)
	w.Write(append(body, '}'))
}

// ceilDiv is d in units, rounded up, without overflow for any d ≥ 0.
func ceilDiv(d, unit time.Duration) int64 {
	n := d / unit
	if d%unit > 0 {
		n++
	}
	return int64(n)
}

// fail counts a failure and logs it if the last line is LogInterval old: the first
// failure is logged at once, the next ones within the interval are counted and
// reported by the next line.
func (l *Limiter) fail(r *http.Request, err error) {
	total := l.failed.Add(1)
	since, ok := l.failedLog.due(l.now().UnixNano(), total, l.logInterval)
	if !ok {
		return
	}
	l.log.LogAttrs(r.Context(), slog.LevelWarn, "rate limiter failed; requests fail "+l.fallback.String(),
		slog.String("error", err.Error()), slog.Uint64("failures", since), slog.Uint64("failures_total", total),
		slog.Duration("interval", l.logInterval))
}

// decidedLocally counts a request decided in-process, and logs as fail does.
func (l *Limiter) decidedLocally(r *http.Request) {
	total := l.degraded.Add(1)
	since, ok := l.degradedLog.due(l.now().UnixNano(), total, l.logInterval)
	if !ok {
		return
	}
	l.log.LogAttrs(r.Context(), slog.LevelWarn, "rate limiter unreachable; deciding locally at this replica's share",
		slog.Uint64("decisions", since), slog.Uint64("decisions_total", total), slog.Duration("interval", l.logInterval))
}

// ClientIP is the address of the client that sent r. It is the peer's address, unless
// the peer is a trusted proxy: then X-Forwarded-For is read from the right (the hop
// the proxy itself added) leftwards, skipping trusted proxies, and the first address
// not trusted is the client. Everything left of it could be forged by the client.
// If every hop is trusted, the leftmost is the client; if a hop is not an address,
// the last trusted one is (grouping its clients under one key rather than believing
// garbage). An unreadable peer address gives the zero Addr, and the key "invalid IP".
func (l *Limiter) ClientIP(r *http.Request) netip.Addr {
	addr := parseHost(r.RemoteAddr)
	if !l.isTrusted(addr) {
		return addr
	}
	hops := r.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		line := hops[i]
		for line != "" {
			var hop string
			if j := strings.LastIndexByte(line, ','); j >= 0 {
				line, hop = line[:j], line[j+1:]
			} else {
				line, hop = "", line
			}
			a := parseHost(strings.TrimSpace(hop))
			if !a.IsValid() {
				return addr
			}
			addr = a
			if !l.isTrusted(a) {
				return a
			}
		}
	}
	return addr
}

// parseHost reads an address with or without a port ("192.0.2.1", "192.0.2.1:80",
// "[2001:db8::1]:80"), IPv4-mapped IPv6 read as IPv4; the zero Addr if it is none.
func parseHost(s string) netip.Addr {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap()
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}

func (l *Limiter) isTrusted(a netip.Addr) bool {
	if !a.IsValid() {
		return false
	}
	for _, p := range l.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
