package rls

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/rlserver/rlserver/policy"
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
		{"10,000 descriptors", "10000 descriptors", &pb.RateLimitRequest{Domain: "d", Descriptors: many}},
		{"1 MB value", "longer than", &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{desc("user", strings.Repeat("x", 1<<20))}}},
		{"1 MB key", "longer than", &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{desc(strings.Repeat("k", 1<<20), "v")}}},
	}
}

// rawCodec sends bytes as they are: a body no protobuf decoder accepts.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error)      { return v.([]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error { return nil }
func (rawCodec) Name() string                       { return "proto" }

// TestBadInputGRPC: each bad request, and a body that is no protobuf, is
// INVALID_ARGUMENT with its reason; the engine never sees it, and the next good
// request is decided as ever.
func TestBadInputGRPC(t *testing.T) {
	fd := &fakeDecider{resp: policy.Response{Overall: policy.CodeOK, Statuses: make([]policy.Status, 1)}}
	f := startFront(t, Config{Decider: fd})
	good := &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{desc("a", "b")}}
	for _, tc := range badRequests() {
		_, err := f.client.ShouldRateLimit(ctxT(t), tc.req)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("%s: %v, want INVALID_ARGUMENT saying %q", tc.name, err, tc.reason)
		}
		if n := len(fd.calls()); n != 0 {
			t.Fatalf("%s: the engine was asked (%d calls)", tc.name, n)
		}
	}
	for _, body := range [][]byte{{0xff, 0xff, 0xff}, {0x0a, 0x10, 'd'}, bytes.Repeat([]byte{0x12, 0x80}, 8)} {
		var out []byte
		err := f.conn.Invoke(ctxT(t), pb.RateLimitService_ShouldRateLimit_FullMethodName, body, &out, grpc.ForceCodec(rawCodec{}))
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "malformed") {
			t.Errorf("body %x: %v, want INVALID_ARGUMENT saying malformed", body, err)
		}
	}
	if n := len(fd.calls()); n != 0 {
		t.Fatalf("malformed bodies reached the engine (%d calls)", n)
	}
	if resp, err := f.client.ShouldRateLimit(ctxT(t), good); err != nil || resp.OverallCode != pb.RateLimitResponse_OK {
		t.Fatalf("a good request after the bad ones: %v %v", resp, err)
	}
}

// TestBadInputHTTP: /json answers theirs "Bad Request" (400) to the same requests and
// to bodies that are no RateLimitRequest, and decides the next good one.
func TestBadInputHTTP(t *testing.T) {
	fd := &fakeDecider{resp: policy.Response{Overall: policy.CodeOK, Statuses: make([]policy.Status, 1)}}
	f := startFront(t, Config{Decider: fd})
	var bodies [][]byte
	for _, tc := range badRequests() {
		js, err := protojson.Marshal(tc.req)
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, js)
	}
	bodies = append(bodies, []byte(`{"domain": 3}`), []byte(`not json`), []byte(`{"domain":"d","descriptors":[{"entries":[{"key":"a"}]}],"nope":1}`), nil)
	for _, b := range bodies {
		code, body := httpPost(t, "http://"+f.httpAddr+"/json", b)
		if code != http.StatusBadRequest || body != "Bad Request\n" {
			t.Errorf("POST /json %.60q: %d %q, want 400 \"Bad Request\\n\"", b, code, body)
		}
	}
	if n := len(fd.calls()); n != 0 {
		t.Fatalf("bad bodies reached the engine (%d calls)", n)
	}
	if code, _ := httpPost(t, "http://"+f.httpAddr+"/json", []byte(`{"domain":"d","descriptors":[{"entries":[{"key":"a","value":"b"}]}]}`)); code != 200 {
		t.Errorf("a good request after the bad ones: %d", code)
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
