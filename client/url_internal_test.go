package client

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestDialURL: each URL form builds its go-redis client with the URL's address,
// credentials and TLS, and with deadlines honoured, one dial per attempt and
// pipelines on the main pool; a URL that does not parse is an error.
func TestDialURL(t *testing.T) {
	rdb, err := dialURL("rediss://alice:s3cret@127.0.0.1:6380/2")
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	o := rdb.(*redis.Client).Options()
	if o.Addr != "127.0.0.1:6380" || o.Username != "alice" || o.Password != "s3cret" || o.DB != 2 ||
		o.TLSConfig == nil || !o.ContextTimeoutEnabled || o.DialerRetries != 1 || o.PipelinePoolSize != -1 {
		t.Errorf("rediss:// options: addr %q user %q password %q db %d TLS %v ContextTimeoutEnabled %v DialerRetries %d PipelinePoolSize %d",
			o.Addr, o.Username, o.Password, o.DB, o.TLSConfig != nil, o.ContextTimeoutEnabled, o.DialerRetries, o.PipelinePoolSize)
	}

	cl, err := dialURL("redis://127.0.0.1:7000?addr=127.0.0.1:7001&addr=127.0.0.1:7002")
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	co := cl.(*redis.ClusterClient).Options()
	if strings.Join(co.Addrs, ",") != "127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002" || !co.ContextTimeoutEnabled || co.DialerRetries != 1 || co.PipelinePoolSize != -1 {
		t.Errorf("cluster options: addrs %v ContextTimeoutEnabled %v DialerRetries %d PipelinePoolSize %d", co.Addrs, co.ContextTimeoutEnabled, co.DialerRetries, co.PipelinePoolSize)
	}

	fo, err := dialURL("redis://:pw@127.0.0.1:26379?master_name=mymaster&addr=127.0.0.1:26380")
	if err != nil {
		t.Fatal(err)
	}
	defer fo.Close()
	if _, ok := fo.(*redis.Client); !ok {
		t.Errorf("a Sentinel URL built a %T, want the *redis.Client of a failover client", fo)
	}

	for _, bad := range []string{"", "http://host:6379", "redis://host:6379?master_name=m&bogus=1",
		"redis://host:notaport", "redis://h:1?addr=h:2&bogus=1", "redis://%zz"} {
		if rdb, err := dialURL(bad); err == nil {
			rdb.Close()
			t.Errorf("dialURL(%q): no error", bad)
		} else if !strings.HasPrefix(err.Error(), "client: Open: ") {
			t.Errorf("dialURL(%q): %v, want an error of client.Open", bad, err)
		}
	}
}
