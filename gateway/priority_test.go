package gateway

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// priorityPolicy is docs/policies.md's domain at a test's scale: 4 a minute for the
// fleet, batch leaving half of it to critical.
const priorityPolicy = `domain: api
priorities:
  descriptor_key: priority
  default: batch
  classes:
    - name: critical
    - name: batch
      reserve_percent: 50
descriptors:
  - key: generic_key
    value: fleet
    rate_limit: {unit: minute, requests_per_unit: 4}
`

// TestNginxPriority runs docs/policies.md's nginx block on Debian's nginx in front of
// /check and a backend: the class comes from the X-Priority header. batch gets 2 of
// 4, a request without the header is batch too, critical the 2 left; the backend sees
// exactly the admitted requests, and refusals are 429 with Retry-After.
func TestNginxPriority(t *testing.T) {
	bin := requireGateway(t, "nginx")
	e, _ := newEngine(t, priorityPolicy)
	srv, err := New(Config{Decider: e, Now: func() int64 { return checkAt }})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.ServeHTTP(ln)
	t.Cleanup(func() { srv.Close() })
	be := startBackend(t)

	dir := t.TempDir()
	port := freePort(t)
	conf := substitute(t, docBlock(t, "../docs/policies.md", "nginx-priority"),
		"127.0.0.1:8082", ln.Addr().String(), readmeBackend, be.addr, "listen 80;", "listen 127.0.0.1:"+port+";")
	var temps strings.Builder
	for _, d := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		fmt.Fprintf(&temps, "    %s_temp_path %s;\n", d, filepath.Join(dir, d))
	}
	conf = substitute(t, conf, "http {\n", "http {\n    access_log off;\n"+temps.String())
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	global := "daemon off; master_process on; pid " + filepath.Join(dir, "nginx.pid") + "; error_log stderr;"
	if os.Geteuid() == 0 {
		global += " user root;"
	}
	startProcess(t, dir, nil, bin, "-e", "stderr", "-p", dir, "-c", "nginx.conf", "-g", global).waitListening(t, "127.0.0.1:"+port)

	want := ""
	for i, step := range []struct {
		class string // X-Priority; "" sends none
		code  int
	}{
		{"batch", 200}, {"batch", 200}, {"batch", 429}, {"", 429},
		{"critical", 200}, {"critical", 200}, {"critical", 429},
	} {
		q := fmt.Sprintf("c%d", i)
		req, _ := http.NewRequest("GET", "http://127.0.0.1:"+port+"/?q="+q, nil)
		if step.class != "" {
			req.Header.Set("X-Priority", step.class)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != step.code {
			t.Fatalf("request %d (X-Priority %q): %d, want %d", i, step.class, resp.StatusCode, step.code)
		}
		if step.code == 429 && resp.Header.Get("Retry-After") == "" {
			t.Errorf("request %d: 429 without Retry-After", i)
		}
		if step.code == 200 {
			want += q + " "
		}
	}
	if got := be.seen(); got != want {
		t.Errorf("the backend saw %q, want %q", got, want)
	}
}
