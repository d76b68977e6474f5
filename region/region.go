// Package region makes an rlserver a region of another, its home
// (-quota-upstream): the RL.FIXED, RL.SLIDE, RL.TOKEN and RL.GCRA calls of the
// region's own clients on the keys it takes are decided in-process from slices of
// the home's quota (client.Slicer), so that only refills cross the link between
// them, and the home's limit holds over every region and the home's own clients: a
// unit is spent at the home before a region admits it.
//
// When the home does not answer, a region spends what it holds, then decides by its
// Fallback: FallbackShare (each region at 1/Regions of every limit), open or closed. What a
// share or open region admitted meanwhile is counted at the home after the heal, as
// far as the home still has room for it in the same window (reconcile.go).
//
// resp dispatches to a Region through resp.Upstream; this package is the only one
// of the server that imports the client.
package region

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/store"
)

// The fallbacks: what a region decides, once it has spent what it holds, while its
// home does not answer.
const (
	FallbackShare  = "share"  // each region at 1/Regions of every limit (client.Fallback)
	FallbackOpen   = "open"   // every call allowed
	FallbackClosed = "closed" // every call denied
)

// Timeout is the budget of a call to the home. A region's link takes tens of ms a
// round trip, more than the client's default budget (50 ms): a second tells a slow
// link from a dead one.
const Timeout = time.Second

// maxProbe is the longest pause between two probes of a home that does not answer
// (the client's breaker doubles it from 100 ms): a heal is noticed within a second.
const maxProbe = time.Second

// closedRetry is a closed region's retry_after while the home does not answer: the
// longest it waits before probing the home again.
const closedRetry = maxProbe

// Errors of Open.
var (
	// ErrNotRLServer is returned when the upstream answers but does not take slices:
	// Redis, or another server without RL.SLICE.
	ErrNotRLServer = errors.New("region: the upstream is not an rlserver: it has no RL.SLICE")
	// ErrOptions is returned for Options out of range.
	ErrOptions = errors.New("region: bad options")

	// errUnanswered is probe's error when the home does not answer: an outage, not
	// a misconfiguration.
	errUnanswered = errors.New("region")
)

// Options configure a Region: the -quota-upstream flags.
type Options struct {
	// URL is the home's, as client.Open takes it, one server: redis://host:port, or
	// rediss://user:pass@host:port for TLS (the system's CAs, or SSL_CERT_FILE's) and
	// an ACL user, which needs RL.SLICE and the limiters (+@ratelimit).
	URL string
	// Prefix takes the keys beginning with it; empty takes every key.
	Prefix string
	// Fallback is FallbackShare, FallbackOpen or FallbackClosed; empty means FallbackShare.
	Fallback string
	// Regions is how many regions share the home's limits: the share's divisor, and a
	// slice is at most 1/(2·Regions) of what a key has left at the home. 0 means 1.
	Regions int
	// Logger logs a home that does not answer at start and the reconciliations
	// after a heal; nil discards them.
	Logger *slog.Logger
}

// Region decides a region's limiter calls from its home's quota. Build it with
// Open; it is safe for concurrent use.
type Region struct {
	opts   Options
	c      *client.Client
	slicer *client.Slicer
	debts  debts // reconcile.go
	link   link  // stats.go
}

// Open checks that the home at o.URL is an rlserver that lets this region take
// slices, spending nothing (RL.SLICE ... PEEK), and returns the Region deciding
// from it. A home that refuses the login or is not an rlserver is an error here. A
// home that does not answer is an outage: the region starts, logs it, and decides by
// its Fallback until the home answers, as it would had the link broken later (a
// region restarted during a partition serves its clients).
func Open(ctx context.Context, o Options) (*Region, error) {
	o.Fallback = strings.ToLower(cmp.Or(o.Fallback, FallbackShare))
	o.Regions = cmp.Or(o.Regions, 1)
	switch {
	case o.Fallback != FallbackShare && o.Fallback != FallbackOpen && o.Fallback != FallbackClosed:
		return nil, fmt.Errorf("%w: the fallback is share, open or closed, got %q", ErrOptions, o.Fallback)
	case o.Regions < 1 || o.Regions > 1e6:
		return nil, fmt.Errorf("%w: regions must be 1 to 1000000, got %d", ErrOptions, o.Regions)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	unanswered := false
	if err := probe(ctx, o.URL, o.Prefix); errors.Is(err, errUnanswered) {
		o.Logger.Warn("region: the home does not answer: deciding by the fallback until it does",
			"home", redacted(o.URL), "fallback", o.Fallback, "err", err)
		unanswered = true
	} else if err != nil {
		return nil, err
	}
	c, err := client.Open(o.URL, client.Options{Timeout: Timeout,
		Fallback: &client.Fallback{Replicas: o.Regions, MaxBackoff: maxProbe}})
	if err != nil {
		return nil, fmt.Errorf("region: %w", err)
	}
	s, err := c.NewSlicer(client.SliceOptions{})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("region: %w", err)
	}
	r := &Region{opts: o, c: c, slicer: s, debts: newDebts()}
	if unanswered {
		r.link.unanswered(time.Now())
	}
	return r, nil
}

// probe asks the home at rawURL for a slice it does not take (PEEK) of a key under
// prefix, which an ACL user kept to the region's keys may ask, and says what
// is wrong when no slice's reply comes back.
func probe(ctx context.Context, rawURL, prefix string) error {
	o, err := redis.ParseURL(rawURL)
	if err != nil {
		return fmt.Errorf("%w: -quota-upstream: %v", ErrOptions, err)
	}
	o.MaxRetries, o.DialerRetries, o.DialTimeout, o.ReadTimeout, o.WriteTimeout = -1, 1, Timeout, Timeout, Timeout
	rdb := redis.NewClient(o)
	defer rdb.Close()
	where := redacted(rawURL)
	v, err := rdb.Do(ctx, "RL.SLICE", "FIXED", prefix+"rlserver:region:probe", 1, 1000, 1, "PEEK").Int64Slice()
	var rerr redis.Error
	switch {
	case errors.As(err, &rerr) && strings.Contains(rerr.Error(), "unknown command"):
		return fmt.Errorf("%w: %s answered %q", ErrNotRLServer, where, rerr.Error())
	case errors.As(err, &rerr):
		return fmt.Errorf("region: %s refused RL.SLICE (its user and password, and the user's commands): %w", where, err)
	case err != nil:
		return fmt.Errorf("%w: %s did not answer RL.SLICE: %w", errUnanswered, where, err)
	case len(v) != 6:
		return fmt.Errorf("%w: %s answered RL.SLICE with %d integers, want 6", ErrNotRLServer, where, len(v))
	}
	return nil
}

// redacted is rawURL with its password replaced, for logs and CONFIG GET.
func redacted(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil {
		return u.Redacted()
	}
	return "(a URL that does not parse)"
}

// Close gives back what the region holds and closes its link to the home.
func (r *Region) Close() error {
	return errors.Join(r.slicer.Close(), r.c.Close())
}

// Param answers CONFIG GET's quota-upstream parameters (resp.Upstream).
func (r *Region) Param(name string) string {
	switch name {
	case "quota-upstream":
		return redacted(r.opts.URL)
	case "quota-upstream-prefix":
		return r.opts.Prefix
	case "quota-upstream-fallback":
		return r.opts.Fallback
	case "quota-upstream-regions":
		return strconv.Itoa(r.opts.Regions)
	}
	return ""
}

// Takes reports whether the region decides req on key (engine.Upstream): a key under
// Prefix, called with RL.FIXED, RL.SLIDE, RL.TOKEN or RL.GCRA.
func (r *Region) Takes(key []byte, req algo.Request) bool {
	_, ok := limitOf(req)
	return ok && strings.HasPrefix(string(key), r.opts.Prefix)
}

// Decide decides req on key from the home's quota (resp.Upstream, engine.Upstream)
// when the region Takes it. A spend is the Slicer's, decided in-process; RL.SLICE,
// PEEK, a cost of 0 and REFUND go to the home, a round trip each. A refused call spends
// nothing, whatever req.Spend says. Other calls are left to the store.
func (r *Region) Decide(key []byte, req algo.Request) (algo.Decision, bool, error) {
	l, ok := limitOf(req)
	if !ok || !strings.HasPrefix(string(key), r.opts.Prefix) {
		return algo.Decision{}, false, nil
	}
	ctx := context.Background() // the client's budget, Timeout, bounds each call
	if req.Slice > 0 {
		d, err := r.slice(ctx, key, l, req)
		return d, true, err
	}
	var res client.Result
	var err error
	switch {
	case req.Peek:
		res, err = r.c.PeekN(ctx, string(key), l, int(req.Cost))
	case req.Refund > 0:
		res, err = r.c.Refund(ctx, string(key), l, int(req.Refund))
	default:
		res, err = r.slicer.AllowN(ctx, string(key), l, int(req.Cost))
	}
	if err != nil {
		return algo.Decision{}, true, upstreamError(err)
	}
	if res.Degraded {
		res = r.fallback(res)
		if res.Allowed && !req.Peek {
			r.debts.add(string(key), l, req, time.Now())
		}
	}
	r.settleIfOwed(res.Degraded)
	return decisionOf(res), true, nil
}

// slice forwards RL.SLICE on a key the region takes to the home, a round trip: a
// Slicer pointed at the region takes its slices of the home's quota, not of the
// region's store. With the home unreachable it is an error: a fallback decides
// requests, not slices, and the Slicer then decides by its own.
func (r *Region) slice(ctx context.Context, key []byte, l client.Limit, req algo.Request) (algo.Decision, error) {
	if req.Peek {
		return algo.Decision{}, errors.New("RL.SLICE ... PEEK of a key the region takes: ask its home")
	}
	sl, err := r.c.TakeSlice(ctx, string(key), l, int(req.Slice))
	if err != nil {
		return algo.Decision{}, upstreamError(err)
	}
	return algo.Decision{Allowed: sl.Granted > 0, Granted: int64(sl.Granted), Limit: int64(sl.Limit),
		Remaining: int64(sl.Remaining), RetryAfter: retryMicros(sl.RetryAfter), ResetAfter: sl.ResetAfter.Microseconds(),
		ValidFor: sl.Valid.Microseconds()}, nil
}

// DecideAll decides rules, each of which the region Takes on distinct keys, all or
// nothing (engine.Upstream): by the Slicer's AllowAll, in-process from what the
// region holds of each key. A rule of cost 0, which AllowAll cannot ask, changes
// nothing: it is looked at by Decide, a round trip, after the others.
func (r *Region) DecideAll(rules []algo.Rule, ds []algo.Decision) (bool, error) {
	crs := make([]client.Rule, 0, len(rules))
	idx := make([]int, 0, len(rules))
	for i, ru := range rules {
		if ru.Req.Cost > 0 {
			l, _ := limitOf(ru.Req)
			crs, idx = append(crs, client.Rule{Key: string(ru.Key), Limit: l, Cost: int(ru.Req.Cost)}), append(idx, i)
		}
	}
	all, err := r.slicer.AllowAll(context.Background(), crs...)
	if err != nil {
		return false, upstreamError(err)
	}
	allowed := true
	for j, res := range all.Results {
		if res.Degraded {
			all.Results[j] = r.fallback(res)
		}
		allowed = allowed && all.Results[j].Allowed
	}
	now := time.Now()
	for j, res := range all.Results {
		// Owed to the home: the units admitted without being spent there, the
		// fallback's, and, when the fallback (open) admits what the Slicer refused,
		// those the Slicer had taken from slices and put back.
		if allowed && (res.Degraded || !all.Allowed) {
			r.debts.add(crs[j].Key, crs[j].Limit, rules[idx[j]].Req, now)
		}
		ds[idx[j]] = decisionOf(res)
	}
	for i, ru := range rules {
		if ru.Req.Cost == 0 {
			d, _, err := r.Decide(ru.Key, ru.Req)
			if err != nil {
				return false, err
			}
			ds[i] = d
		}
	}
	r.settleIfOwed(all.Degraded)
	return allowed, nil
}

// upstreamError is the reply's error of a call the client failed.
func upstreamError(err error) error {
	if errors.Is(err, client.ErrWrongType) {
		return store.ErrWrongType
	}
	return fmt.Errorf("quota upstream: %w", err)
}

// settleIfOwed starts a settle of the debts after a call the home answered (not
// degraded), if any are owed and none runs; after one it did not, it notes the
// fallback for INFO.
func (r *Region) settleIfOwed(degraded bool) {
	switch {
	case degraded:
		r.link.fellBack(time.Now())
	case r.debts.pending() && !r.debts.settling.Load():
		go r.settle()
	}
}

// fallback is the decision of the region's Fallback while the home does not answer:
// share's, res as the client's Fallback made it, or open's or closed's.
func (r *Region) fallback(res client.Result) client.Result {
	switch r.opts.Fallback {
	case FallbackOpen:
		res.Allowed, res.RetryAfter = true, 0
	case FallbackClosed:
		res.Allowed, res.Remaining, res.RetryAfter = false, 0, closedRetry
	}
	return res
}

// limitOf is the client's Limit of a limiter call the region takes, or false.
func limitOf(req algo.Request) (client.Limit, bool) {
	per := time.Duration(req.Window) * time.Microsecond
	var l client.Limit
	switch req.Kind {
	case algo.KindFixed:
		l = client.Fixed(int(req.Limit), per)
	case algo.KindSlide:
		l = client.Slide(int(req.Limit), per)
	case algo.KindToken:
		l = client.TokenRate(int(cmp.Or(req.Rate, req.Limit)), per, int(req.Limit))
	case algo.KindGCRA:
		l = client.GCRA(int(req.Limit), per, int(cmp.Or(req.Burst, req.Limit)))
	default:
		return client.Limit{}, false
	}
	return l.WithReserve(int(req.Reserve)), true
}

// decisionOf is the reply of a Result: the five integers.
func decisionOf(res client.Result) algo.Decision {
	return algo.Decision{Allowed: res.Allowed, Limit: int64(res.Limit), Remaining: int64(res.Remaining),
		RetryAfter: retryMicros(res.RetryAfter), ResetAfter: res.ResetAfter.Microseconds()}
}

// retryMicros is a client's RetryAfter as the reply's retry_after: µs, -1 for Never.
func retryMicros(d time.Duration) int64 {
	if d == client.Never {
		return -1
	}
	return d.Microseconds()
}
