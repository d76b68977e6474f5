// Package middleware rate-limits net/http handlers with package client, and refuses
// the way the Redis + Lua lab of docs/experiments.md teaches: 429, never a 5xx, with
// the time to come back.
//
// A request is checked against several dimensions, each its own limit and its own
// key: the user (a function of yours: most precise, but a login endpoint has no user
// yet), the client IP (protects public endpoints; X-Forwarded-For and X-Real-IP are
// read only from trusted proxies, by the rule /check follows: Limiter.ClientIP), the route (protects what is expensive), or a combination. All of
// them are decided in one call, all or nothing (client.AllowAll, RL.ALL): a request
// is served only if every dimension admits it, and a request that one dimension
// refuses consumes nothing in the others. (On a Redis Cluster, that call's keys must
// share a slot: see Config.Prefix.)
//
// Config.Concurrency adds a limit on the requests in flight per key (client.Acquire,
// RL.ACQUIRE): a request the rate limits admit takes a lease, and gives it back when
// the handler returns (or panics). While the handler runs, the middleware renews the
// lease (RL.RENEW, every Concurrency.Renew) to end when the handler is expected to
// return, by the running mean of its last requests' times, but never more than
// Concurrency.Lease ahead: an instance that dies mid-request keeps its place for at
// most one Lease. When every place is taken the request gets a 429 whose body says
// "concurrency_limited", with the time until the earliest lease ends: when the
// earliest place is expected to free, not the Lease's length (Retry-After rounded to
// the nearest second, it being an estimate). The rate dimensions have consumed the
// request's units by then: RL.ALL cannot take a lease.
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
// The body holds the wait in ms: Retry-After cannot say less than a second, and
// clients all told "1" would all come back at the same instant. Every refusal's wait
// (these two, and a concurrency or fallback refusal's) is spread: the true wait plus a
// random jitter of up to a tenth of it (10 ms at least, a second at most), never less,
// so that clients refused together come back apart. A denied request
// carries the figures of the one limit that denied it (of several, the one with the
// longest wait: the request passes only when all admit), never a mix of two limits':
// the others consumed nothing. An allowed request carries the same informational
// headers, X-RateLimit-* those of its most restrictive dimension (the least
// remaining). RateLimit-Policy and RateLimit follow the IETF draft
// (draft-ietf-httpapi-ratelimit-headers-11, structured fields): one item per dimension
// that applies (only the denying one's on a 429), named by the dimension, with q the
// limit's quota (client.Limit.Quota) and w its window in seconds (left out when the
// window is not whole seconds: the field has no finer unit); r the remaining quota
// and t the seconds until it is full again, or, for a dimension that denied, until
// the request may be retried, as the draft asks (Retry-After is never earlier than
// the end of t).
//
// A route's own limit is an Optional dimension that Limiter.With adds, so one
// Limiter decides it with the others, in the same call:
//
//	lim, err := middleware.New(middleware.Config{Client: rl, User: userOf, Dimensions: []middleware.Dimension{
//		{Name: "user", By: middleware.ByUser, Limit: client.Token(5, 10*time.Second)},
//		{Name: "ip", By: middleware.ByIP, Limit: client.Fixed(20, time.Minute)},
//		{Name: "report", By: middleware.ByUser, Limit: client.Fixed(10, time.Hour), Optional: true},
//	}})
//	report, err := lim.With("report") // an unknown name is an error here
//	mux.Handle("GET /report", report.Handler(reportHandler))
//	mux.Handle("/", lim.Handler(app))
//
// Two Limiters stacked also work (the inner's refusal wipes the outer's figures), but
// they make two calls and count a request the inner one refuses in the outer's limits.
//
// Config.Policy takes the limits from the policy rlserver runs with (-limits) instead of
// Dimensions: a domain and descriptors in the words of rlserver's /check query
// (remote_address, request_headers:HEADER:KEY, generic_key:VALUE, method, path, host),
// built per request by package httpdesc, as /check builds them, and decided in one
// client.Policy call (RL.POLICY). A gateway asking /check and a Go service behind it
// then run one policy file on one rlserver and spend one count. A descriptor whose
// header is missing is dropped, as Envoy drops it; with every descriptor dropped the
// request is served unasked. The answer is /check's: RateLimit-Limit, -Remaining and
// -Reset and the same as X-RateLimit-* of the descriptor nearest its limit (the last
// refused), on 429 Retry-After (whole seconds, rounded up) and the body above; a
// request whose descriptors rlserver refuses (a value over 4 KB) gets 400 with the
// reason, never passed on unlimited. FallbackLocal has no policy to decide by: New
// refuses it.
//
// A Leaky dimension shapes rather than refuses: an allowed request waits its turn
// (client.Result.RetryAfter) before the handler runs, and a client that leaves
// meanwhile is not served. It holds its concurrency lease while it waits.
//
// Priorities keep part of every limit for the requests that matter most, by the names
// and shares a policy's priorities use: Config.Priorities (client.NewPriorities) and
// Config.Priority, which names a request's class,
//
//	p, err := client.NewPriorities(client.Class{Name: "critical"}, client.Class{Name: "sheddable", ReservePercent: 20})
//	lim, err := middleware.New(middleware.Config{Client: rl, Priorities: p,
//		Priority:   func(r *http.Request) string { return r.Header.Get("X-Priority") },
//		Dimensions: []middleware.Dimension{{Name: "ip", By: middleware.ByIP, Limit: client.Fixed(100, time.Minute)}}})
//
// so that sheddable requests stop at 80 of the 100 and critical ones have the last 20
// (RL.ALL's RESERVE, and RL.ACQUIRE's for a Concurrency limit's places). An unknown
// name is the lowest class. Config.Shedder puts a shed.Shedder in front, by the same
// names: when the service itself is over capacity, whatever the limits say, it queues
// or sheds the lowest priorities first with a 503, before any call to the limiter
// (docs/overload.md: limit, throttle, shed).
//
// Health checks bypass the limiter and the Shedder (Config.HealthPaths): a limiter that
// sheds them gets the node pulled from the load balancer, its load moved to the others,
// and so on.
//
// When the limiter fails (an error, or no answer within Config.Timeout, 50 ms by
// default), Config.Fallback decides. FallbackOpen (the default) serves the request as
// if allowed. FallbackClosed refuses it with 429 and a wait of a second (spread: the
// body's retryAfterMs 1000 to 1100, Retry-After 2 once rounded up), without X-RateLimit
// fields, there being no figures to give.
// Not 503: that would tell the load balancer this node is sick, when it is the shared
// limiter that is. FallbackLocal goes on limiting: the Client (made with
// client.Options.Fallback) decides in-process at this replica's share of each limit,
// and the request is answered as any other. Failures are counted in Stats and logged
// at most once per Config.LogInterval, with the count since the last line: a dead
// limiter under load must not become a flood of log lines; so are local decisions. A
// request that fails open is served without a concurrency lease.
package middleware
