package docs_test

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/internal/spread"
)

// TestREADMEGateway runs the README's gateway example as a reader would: its policy
// in limits/edge.yaml, its rlserver command line (the addresses moved to free
// loopback ports), then its /check call six times: five admitted, the sixth refused
// with Retry-After, as the policy's 5 a minute says; and its grpcurl call, which
// Envoy's filter makes, answered OK.
func TestREADMEGateway(t *testing.T) {
	var readme page
	for _, p := range pages(t) {
		if p.path == "README.md" {
			readme = p
		}
	}
	bs, _ := readme.blocks()
	var policyText, shText string
	for _, b := range bs {
		if b.lang == "yaml" && policyDoc.MatchString(b.text) && policyText == "" {
			policyText = b.text
		}
		if b.lang == "sh" && strings.Contains(b.text, "bin/rlserver -limits") {
			shText = strings.ReplaceAll(b.text, "\\\n", " ")
		}
	}
	if policyText == "" || shText == "" {
		t.Fatal("README.md has no gateway example: a policy block and a sh block starting bin/rlserver -limits")
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "limits"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "limits", "edge.yaml"), []byte(policyText+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addrs, err := launch.FreeAddrs(2)
	if err != nil {
		t.Fatal(err)
	}
	// The README's addresses, and where this test puts them.
	moved := strings.NewReplacer("127.0.0.1:8080", addrs[0], "127.0.0.1:8081", addrs[1])
	var server, curl, grpcurl []string
	for _, line := range strings.Split(shText, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		words, err := shellWords(stripComment(line))
		if err != nil {
			t.Fatalf("README.md: %q: %v", line, err)
		}
		for i := range words {
			words[i] = moved.Replace(words[i])
		}
		switch {
		case len(words) == 0:
		case words[0] == "bin/rlserver":
			server = words[1:]
		case words[0] == "curl":
			curl = words
		case words[0] == "grpcurl":
			grpcurl = words
		}
	}
	if server == nil || curl == nil || grpcurl == nil {
		t.Fatalf("README.md's gateway block lacks bin/rlserver, curl or grpcurl:\n%s", shText)
	}
	for i, w := range server {
		if w == "limits" && i > 0 && server[i-1] == "-limits" {
			server[i] = filepath.Join(dir, "limits")
		}
	}
	proc, err := launch.RLServer(binary(t), dir, server...)
	if err != nil {
		t.Fatal(err)
	}
	defer proc.Stop()
	waitListening(t, addrs[0])
	waitListening(t, addrs[1])

	url := "http://" + curl[len(curl)-1]
	for i := 1; i <= 6; i++ {
		res, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		want := http.StatusOK
		if i == 6 {
			want = http.StatusTooManyRequests
		}
		if res.StatusCode != want {
			t.Fatalf("call %d of %s: %s, want %d", i, url, res.Status, want)
		}
		if i == 6 {
			// The window's end is at most 60 s away; the jitter adds up to
			// spread.MaxJitter, and the header rounds up.
			maxWait := 60 + int(spread.MaxJitter/time.Second)
			if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || s < 1 || s > maxWait {
				t.Errorf("the refusal's Retry-After is %q, want 1 to %d seconds", res.Header.Get("Retry-After"), maxWait)
			}
		}
	}

	path, err := exec.LookPath("grpcurl")
	if err != nil {
		const hint = "grpcurl is not on PATH (go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.4)"
		if os.Getenv("RLSERVER_REQUIRE_RATELIMIT") == "1" {
			t.Fatal(hint)
		}
		t.Skip(hint + "; RLSERVER_REQUIRE_RATELIMIT=1 makes this a failure")
	}
	out, err := exec.Command(path, grpcurl[1:]...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"overallCode": "OK"`) {
		t.Errorf("grpcurl %s: %v\n%s", strings.Join(grpcurl[1:], " "), err, out)
	}
}

// waitListening waits, at most 5 s, until something accepts connections on addr:
// rlserver answers PING before its gateway listeners are up.
func waitListening(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s: %v", addr, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
