package gateway

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/rlserver/rlserver/policy/config"
	"github.com/rlserver/rlserver/policy/engine"
	"github.com/rlserver/rlserver/store"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
)

// badRequests are requests no engine should see, each with a word of its reason.
func badRequests() []struct {
	name, reason string
	req          *pb.RateLimitRequest
} {
	many := make([]*rlv3.RateLimitDescriptor, 10000)
	for i := range many {
		many[i] = desc("user", fmt.Sprint(i))
	}
	return []struct {
		name, reason string
		req          *pb.RateLimitRequest
	}{
		{"empty domain", "domain must not be empty", &pb.RateLimitRequest{Descriptors: []*rlv3.RateLimitDescriptor{desc("a", "b")}}},
		{"no descriptors", "descriptor list must not be empty", &pb.RateLimitRequest{Domain: "d"}},
		{"descriptor without entries", "no entries", &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{{}}}},
		{"empty key", "empty key", &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{desc("a", "b", "", "c")}}},
		{"10,000 descriptors", "10000 descriptors, more than", &pb.RateLimitRequest{Domain: "d", Descriptors: many}},
		{"1 MB value", "value longer than", &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{desc("user", strings.Repeat("x", 1<<20))}}},
		{"1 MB key", "key longer than", &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{desc(strings.Repeat("k", 1<<20), "v")}}},
	}
}

// rawCodec sends bytes as they are: a body no protobuf decoder accepts.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error)      { return v.([]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error { return nil }
func (rawCodec) Name() string                       { return "proto" }

// badPolicy limits the users the bad requests name, so that a bad request decided
// would leave a key behind.
const badPolicy = `
domain: d
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: a
    rate_limit: {unit: minute, requests_per_unit: 5}
`

// newEngine is the real engine on a store of its own, under the policy yamlText.
func newEngine(t testing.TB, yamlText string) (*engine.Engine, *store.Store) {
	t.Helper()
	p, err := config.Parse("test.yaml", []byte(yamlText))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.New(store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return engine.New(st, p), st
}

// TestBadInputGRPC: each bad request, and a body that is no protobuf, is
// INVALID_ARGUMENT with its reason; the store is left without a key, and the next
// good request is decided as ever.
func TestBadInputGRPC(t *testing.T) {
	e, st := newEngine(t, badPolicy)
	f := startFront(t, Config{Decider: e})
	for _, tc := range badRequests() {
		_, err := f.client.ShouldRateLimit(ctxT(t), tc.req)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("%s: %v, want INVALID_ARGUMENT saying %q", tc.name, err, tc.reason)
		}
	}
	for _, body := range [][]byte{{0xff, 0xff, 0xff}, {0x0a, 0x10, 'd'}, bytes.Repeat([]byte{0x12, 0x80}, 8)} {
		var out []byte
		err := f.conn.Invoke(ctxT(t), pb.RateLimitService_ShouldRateLimit_FullMethodName, body, &out, grpc.ForceCodec(rawCodec{}))
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "malformed") {
			t.Errorf("body %x: %v, want INVALID_ARGUMENT saying malformed", body, err)
		}
	}
	now := time.Now().UnixMicro()
	if n := st.Len(now); n != 0 {
		t.Fatalf("bad requests left %d keys", n)
	}
	good := &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{desc("user", "1")}}
	if resp, err := f.client.ShouldRateLimit(ctxT(t), good); err != nil || resp.OverallCode != pb.RateLimitResponse_OK || resp.Statuses[0].LimitRemaining != 4 {
		t.Fatalf("a good request after the bad ones: %v %v", resp, err)
	}
	if n := st.Len(now); n != 1 {
		t.Fatalf("a good request left %d keys, want 1", n)
	}
}

// TestBadInputHTTP: /json answers theirs "Bad Request" (400) to the same requests and
// to bodies that are no RateLimitRequest, spends nothing, and decides the next good one.
func TestBadInputHTTP(t *testing.T) {
	e, st := newEngine(t, badPolicy)
	f := startFront(t, Config{Decider: e})
	var bodies [][]byte
	for _, tc := range badRequests() {
		js, err := protojson.Marshal(tc.req)
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, js)
	}
	bodies = append(bodies, []byte(`{"domain": 3}`), []byte(`not json`), []byte(`{"domain":"d","descriptors":[{"entries":[{"key":"user"}]}],"nope":1}`), nil)
	for _, b := range bodies {
		code, body := httpPost(t, "http://"+f.httpAddr+"/json", b)
		if code != http.StatusBadRequest || body != "Bad Request\n" {
			t.Errorf("POST /json %.60q: %d %q, want 400 \"Bad Request\\n\"", b, code, body)
		}
	}
	if n := st.Len(time.Now().UnixMicro()); n != 0 {
		t.Fatalf("bad bodies left %d keys", n)
	}
	code, body := httpPost(t, "http://"+f.httpAddr+"/json", []byte(`{"domain":"d","descriptors":[{"entries":[{"key":"user","value":"b"}]}]}`))
	var resp pb.RateLimitResponse
	if err := protojson.Unmarshal([]byte(body), &resp); code != 200 || err != nil || resp.Statuses[0].LimitRemaining != 4 {
		t.Errorf("a good request after the bad ones: %d %s (%v)", code, body, err)
	}
}

func httpGet(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func httpPost(t testing.TB, url string, body []byte) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
