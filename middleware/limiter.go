package middleware

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/shed"
)

// Limiter is the middleware: wrap handlers with Handler. It is safe for concurrent use.
type Limiter struct {
	*limiterState // shared with the Limiters that With makes of it

	dims  []dimension  // the dimensions this Limiter decides
	conc  *concurrency // nil if no concurrency limit applies here
	needs Keys         // the key parts dims and conc are made of
}

// limiterState is what a Limiter and the Limiters With makes of it share: the
// configuration, the breaker, the counts and the log's pace.
type limiterState struct {
	client      *client.Client
	every       []dimension    // Config.Dimensions, Optional ones included
	everyConc   *concurrency   // Config.Concurrency
	policy      *policyRules   // nil without Config.Policy
	slicer      *client.Slicer // nil without Config.Slicer
	user        func(*http.Request) string
	route       func(*http.Request) string
	trusted     []netip.Prefix
	health      map[string]bool
	healthPaths []string // health's paths, for the Shedder
	classes     classes
	shedder     *shed.Shedder // nil without Config.Shedder
	timeout     time.Duration
	fallback    Fallback
	log         *slog.Logger
	name        string
	logInterval time.Duration
	// breaker spares the calls, and their timeouts, while the limiter is down; nil
	// when the Client has a Fallback, whose own breaker does that.
	breaker *client.Breaker
	down    atomic.Bool  // a failure was logged and no call has succeeded since
	backAt  atomic.Int64 // unix ns when the last "rate limiter back" line was logged

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

// dimension is a Dimension with its header text made once.
type dimension struct {
	Dimension
	prefix string         // Config.Prefix + Name + ":"
	policy string         // its RateLimit-Policy item
	item   string         // the start of its RateLimit item: "name";r=
	limits []client.Limit // Limit for each priority class (classes.index)
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

// Handler returns next behind the limiter (and the Shedder, first, if there is one).
func (l *Limiter) Handler(next http.Handler) http.Handler {
	var took estimate // next's running time, for its concurrency leases
	return l.shedding(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { l.serve(w, r, next, &took) }))
}

// decided is one dimension's answer to a request.
type decided struct {
	dim *dimension
	res client.Result
}

func (l *Limiter) serve(w http.ResponseWriter, r *http.Request, next http.Handler, took *estimate) {
	if l.health[r.URL.Path] {
		l.bypassed.Add(1)
		next.ServeHTTP(w, r)
		return
	}
	if l.policy != nil {
		l.servePolicy(w, r, next)
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
	class := l.classes.index(r)
	for i := range l.dims {
		d := &l.dims[i]
		if key, ok := makeKey(d.prefix, d.By, user, ip, route); ok {
			applies = append(applies, d)
			rules = append(rules, client.Rule{Key: key, Limit: d.limits[class]})
			policies = append(policies, d.policy)
		}
	}

	began := l.now()
	ctx, cancel := context.WithTimeout(r.Context(), l.timeout)
	defer cancel()
	var answers []decided
	var failure error
	degraded := false
	if len(rules) > 0 {
		var all client.AllResult
		err := l.call(ctx, func(ctx context.Context) (err error) {
			if l.slicer != nil {
				all, err = l.slicer.AllowAll(ctx, rules...)
			} else {
				all, err = l.client.AllowAll(ctx, rules...)
			}
			return err
		})
		switch {
		case err != nil:
			failure = fmt.Errorf("dimensions %s: %w", names(applies), err)
		case all.Degraded && l.fallback != FallbackLocal:
			// The Client decided locally, but this Limiter fails open or closed.
			failure = fmt.Errorf("dimensions %s: %w", names(applies), client.ErrUnavailable)
		default:
			degraded = all.Degraded
			l.answered(r, degraded)
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
		l.fail(r, began, failure)
		if l.fallback == FallbackClosed {
			refuseClosed(w)
			return
		}
	}
	if denied, ok := longestDenial(answers); ok {
		l.limited.Add(1)
		// The refusing dimension's figures only: the others' r would be what they
		// would have left had the request passed, and it consumed nothing there.
		setHeaders(h, []string{denied.dim.policy}, []decided{denied}, denied)
		refuse(w, "rate_limited", denied.res.RetryAfter, false)
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
		start := l.now()
		var lease *client.Lease
		var answered bool
		if lease, failed, answered = l.acquire(ctx, w, r, user, ip, route, degraded, took.lease(l.conc, 0), l.conc.reserves[class]); answered {
			return
		}
		stop := l.keep(lease, start, took)
		// Given back however the handler ends, a panic included, on a context of its
		// own: the request's may be done. A failed release is not retried, nor
		// counted (the request already is): the lease ends by itself at its deadline.
		defer func() {
			stop()
			if lease != nil {
				took.observe(l.now().Sub(start))
			}
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

// call runs a call to the limiter through the breaker, if the Limiter has one.
func (l *Limiter) call(ctx context.Context, do func(ctx context.Context) error) error {
	if l.breaker == nil {
		return do(ctx)
	}
	return l.breaker.Do(ctx, do)
}

// answered logs, once, that the limiter answers again after a failure was logged.
func (l *Limiter) answered(r *http.Request, degraded bool) {
	if degraded || !l.down.Load() || !l.down.CompareAndSwap(true, false) {
		return
	}
	l.backAt.Store(l.now().UnixNano())
	l.log.LogAttrs(r.Context(), slog.LevelInfo, "rate limiter back", slog.String("limiter", l.name))
}

// fail counts a failure of a call begun at began and logs it if the last line is
// LogInterval old: the first failure is logged at once, the next ones within the
// interval are counted and reported by the next line. A call begun before the
// limiter was last logged back is counted only: it met the outage that ended, and
// logging it would say the limiter is down again when it answers.
func (l *Limiter) fail(r *http.Request, began time.Time, err error) {
	total := l.failed.Add(1)
	if began.UnixNano() < l.backAt.Load() {
		return
	}
	since, ok := l.failedLog.due(l.now().UnixNano(), total, l.logInterval)
	if !ok {
		return
	}
	l.down.Store(true)
	l.log.LogAttrs(r.Context(), slog.LevelWarn, "rate limiter failed; requests fail "+l.fallback.String(),
		slog.String("limiter", l.name), slog.String("error", err.Error()), slog.Uint64("failures", since), slog.Uint64("failures_total", total),
		slog.Duration("interval", l.logInterval))
}

// decidedLocally counts a request decided in-process, and logs as fail does.
func (l *Limiter) decidedLocally(r *http.Request) {
	total := l.degraded.Add(1)
	since, ok := l.degradedLog.due(l.now().UnixNano(), total, l.logInterval)
	if !ok {
		return
	}
	l.down.Store(true)
	l.log.LogAttrs(r.Context(), slog.LevelWarn, "rate limiter unreachable; deciding locally at this replica's share",
		slog.String("limiter", l.name), slog.Uint64("decisions", since), slog.Uint64("decisions_total", total), slog.Duration("interval", l.logInterval))
}
