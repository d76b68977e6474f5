package client

import (
	"fmt"
	"net/url"

	"github.com/redis/go-redis/v9"
)

// Open returns a Client for the rlserver (or Redis Sentinel-watched, or Redis Cluster
// of rlservers) at rawURL, with a go-redis client built safe by default; Close closes
// it. The forms are go-redis's:
//
//	redis://host:6379/                        one server
//	rediss://user:pass@host:6380/             TLS, ACL user and password
//	redis://:pass@s1:26379?master_name=m&addr=s2:26379   Sentinels (redis.ParseFailoverURL)
//	redis://n1:7000?addr=n2:7000&addr=n3:7000            a cluster (redis.ParseClusterURL)
//
// a master_name parameter naming Sentinels, an addr parameter a cluster's further
// seeds. Safe by default: context deadlines are honoured (ContextTimeoutEnabled), and
// a failed dial is not retried (DialerRetries 1), since go-redis retries on a goroutine
// of its own, 5 times 100 ms apart, logging each failure and leaving the caller only
// its context's error instead of the dial's. A URL that does not parse is an error
// here, not at the first call.
//
// Quiet while the server is down: go-redis logs each failed dial of its pool to its
// process-wide logger, which Open leaves alone (redis.SetLogger would change it for
// every go-redis client of the process). Instead, once a dial has failed or a
// connection broke, calls stay out of the pool: one at a time dials the server
// outside it, unlogged, and the others fail at once, until such a dial succeeds. An
// outage so logs at most one go-redis line, its first failed pool dial, whatever its
// length and the rate of calls, per cluster node for a cluster. Calls sent on their
// own (Batch.Off) may each log a line when they dial at the very moment the outage
// begins. With Sentinels, the gate guards the master; while every Sentinel is
// unreachable too, each dial that looks for the master logs two lines per Sentinel
// (its Sentinel client's dial, and the lookup that failed).
func Open(rawURL string, opts ...Options) (*Client, error) {
	rdb, err := dialURL(rawURL)
	if err != nil {
		return nil, err
	}
	c, err := New(rdb, opts...)
	if err != nil {
		rdb.Close()
		return nil, err
	}
	c.owned = rdb
	return c, nil
}

// Close closes the go-redis client that Open built; it does nothing for a Client
// made on a go-redis client of the caller's, which the caller closes.
func (c *Client) Close() error {
	if c.owned == nil {
		return nil
	}
	return c.owned.Close()
}

// dialURL builds the go-redis client of Open.
func dialURL(rawURL string) (redis.UniversalClient, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("client: Open: %w", err)
	}
	q := u.Query()
	switch {
	case q.Has("master_name"):
		o, err := redis.ParseFailoverURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("client: Open: %w", err)
		}
		safe(&o.ContextTimeoutEnabled, &o.DialerRetries, &o.PipelinePoolSize)
		o.MaxRetries = orDefault(o.MaxRetries, -1) // each Sentinel asked once per lookup: a retry is a line more
		return gate(redis.NewFailoverClient(o)), nil
	case q.Has("addr"):
		o, err := redis.ParseClusterURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("client: Open: %w", err)
		}
		safe(&o.ContextTimeoutEnabled, &o.DialerRetries, &o.PipelinePoolSize)
		o.NewClient = func(o *redis.Options) *redis.Client { return gate(redis.NewClient(o)) } // a gate per node
		return redis.NewClusterClient(o), nil
	}
	o, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("client: Open: %w", err)
	}
	safe(&o.ContextTimeoutEnabled, &o.DialerRetries, &o.PipelinePoolSize)
	return gate(redis.NewClient(o)), nil
}

// safe sets Open's defaults on a URL's options, where the URL set none: context
// deadlines honoured; one dial per attempt (go-redis's default dials 5 times 100 ms
// apart, on a goroutine of its own, and leaves a caller with a shorter budget only
// its context's error); pipelines on the main pool (PipelinePoolSize -1): with
// go-redis's dedicated pipeline pool, a pipeline whose dial fails there dials again
// in the main pool, and both failures are logged.
func safe(contextTimeout *bool, dialerRetries, pipelinePoolSize *int) {
	*contextTimeout = true
	*dialerRetries = orDefault(*dialerRetries, 1)
	*pipelinePoolSize = orDefault(*pipelinePoolSize, -1)
}
