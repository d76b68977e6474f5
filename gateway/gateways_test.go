package gateway

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// docs/gateway.md's placeholders, which the tests replace with their loopback ports.
const (
	readmeRLServer = "127.0.0.1:8080"
	readmeBackend  = "127.0.0.1:3000"
)

// TestNginx runs docs/gateway.md's nginx block on Debian's nginx, in front of a backend
// counting requests and of rlserver's /check: a burst of 8 from one client address
// (X-Forwarded-For through real_ip) on 5 a minute gets 5 through and 3 × 429 with
// Retry-After 1..61 (at most 60 s, spread by up to 1 s); another address gets through; the backend saw exactly those.
func TestNginx(t *testing.T) {
	bin := requireGateway(t, "nginx")
	rl, be := startEdge(t), startBackend(t)
	dir := t.TempDir()
	port := freePort(t)
	conf := substitute(t, readmeBlock(t, "nginx"),
		readmeRLServer, rl.addr, readmeBackend, be.addr, "listen 80;", "listen 127.0.0.1:"+port+";")
	// Temporary files under the test's directory, not Debian's /var/lib/nginx.
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
	p := startProcess(t, dir, nil, bin, "-e", "stderr", "-p", dir, "-c", "nginx.conf", "-g", global)
	p.waitListening(t, "127.0.0.1:"+port)
	url := "http://127.0.0.1:" + port + "/"
	burst(t, url, "X-Forwarded-For", "203.0.113.7", "198.51.100.9", be, rl, true)

	// rlserver stopped: closed as it is, open with docs/gateway.md's two lines.
	open := strings.SplitN(readmeBlock(t, "nginx-fail-open"), "\n", 2)
	conf = substitute(t, conf, "error_page 403 = @limited;", "error_page 403 = @limited;\n"+open[0],
		"        location @limited {", open[1]+"        location @limited {")
	openPort := freePort(t)
	conf = substitute(t, conf, "listen 127.0.0.1:"+port+";", "listen 127.0.0.1:"+openPort+";")
	if err := os.WriteFile(filepath.Join(dir, "open.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	global = strings.Replace(global, "nginx.pid", "open.pid", 1)
	startProcess(t, dir, nil, bin, "-e", "stderr", "-p", dir, "-c", "open.conf", "-g", global).waitListening(t, "127.0.0.1:"+openPort)
	rl.stop()
	failMode(t, url, http.StatusInternalServerError, "http://127.0.0.1:"+openPort+"/", be)
}

// failMode checks, rlserver stopped, that closed answers want and open passes the
// request on to the backend.
func failMode(t *testing.T, closed string, want int, open string, be *backend) {
	t.Helper()
	before := be.seen()
	if resp, err := http.Get(closed + "?q=closed"); err != nil || resp.StatusCode != want {
		t.Fatalf("rlserver down, fail closed: %v %v, want %d", resp, err, want)
	}
	if resp, err := http.Get(open + "?q=open"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("rlserver down, fail open: %v %v, want 200", resp, err)
	}
	if got := strings.TrimPrefix(be.seen(), before); got != "open " {
		t.Fatalf("rlserver down: the backend saw %q, want the fail-open request only", got)
	}
}

// TestCaddy runs docs/gateway.md's Caddyfile on Caddy 2.6, per API key: the same figures.
func TestCaddy(t *testing.T) {
	bin := requireGateway(t, "caddy")
	rl, be := startEdge(t), startBackend(t)
	dir := t.TempDir()
	port := freePort(t)
	conf := substitute(t, readmeBlock(t, "caddy"),
		readmeRLServer, rl.addr, readmeBackend, be.addr, "\n:8000 {\n", "\nhttp://127.0.0.1:"+port+" {\n\tbind 127.0.0.1\n")
	if err := os.WriteFile(filepath.Join(dir, "Caddyfile"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + dir, "XDG_DATA_HOME=" + dir, "XDG_CONFIG_HOME=" + dir}
	p := startProcess(t, dir, env, bin, "run", "--config", "Caddyfile", "--adapter", "caddyfile")
	p.waitListening(t, "127.0.0.1:"+port)
	url := "http://127.0.0.1:" + port + "/"
	burst(t, url, "X-Api-Key", "k1", "k2", be, rl, false)

	// rlserver stopped: closed as it is, open with docs/gateway.md's handle_errors, on a
	// second site of the same Caddy config (a second Caddy would share its admin lock).
	openPort := freePort(t)
	site := conf[strings.Index(conf, "\nhttp://"):]
	site = substitute(t, site, "127.0.0.1:"+port, "127.0.0.1:"+openPort)
	last := strings.LastIndex(site, "}")
	site = site[:last] + substitute(t, readmeBlock(t, "caddy-fail-open"), readmeBackend, be.addr) + site[last:]
	dir2 := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir2, "Caddyfile"), []byte(conf[:strings.Index(conf, "\nhttp://")]+site), 0o644); err != nil {
		t.Fatal(err)
	}
	env2 := []string{"HOME=" + dir2, "XDG_DATA_HOME=" + dir2, "XDG_CONFIG_HOME=" + dir2}
	startProcess(t, dir2, env2, bin, "run", "--config", "Caddyfile", "--adapter", "caddyfile").waitListening(t, "127.0.0.1:"+openPort)
	rl.stop()
	failMode(t, url, http.StatusBadGateway, "http://127.0.0.1:"+openPort+"/", be)
}

// burst sends 8 requests with header hdr = first, then one with hdr = other, and
// checks the gateway's answers and what the backend saw.
func burst(t *testing.T, url, hdr, first, other string, be *backend, rl *edge, headersOn200 bool) {
	t.Helper()
	send := func(v string) *http.Response {
		req, _ := http.NewRequest("GET", url+"?q="+v, nil)
		req.Header.Set(hdr, v)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	var codes []int
	for i := range 8 {
		resp := send(first)
		codes = append(codes, resp.StatusCode)
		switch resp.StatusCode {
		case http.StatusOK:
			if got := resp.Header.Get("RateLimit-Remaining"); headersOn200 && got != strconv.Itoa(4-i) {
				t.Errorf("request %d: RateLimit-Remaining %q, want %d", i, got, 4-i)
			}
		case http.StatusTooManyRequests:
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || s < 1 || s > 61 {
				t.Errorf("request %d: Retry-After %q, want 1..61 (at most 60 s, spread)", i, resp.Header.Get("Retry-After"))
			}
			if resp.Header.Get("RateLimit-Remaining") != "0" {
				t.Errorf("request %d: RateLimit-Remaining %q, want 0", i, resp.Header.Get("RateLimit-Remaining"))
			}
		}
	}
	if want := []int{200, 200, 200, 200, 200, 429, 429, 429}; fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Fatalf("burst of 8 on 5 a minute: %v, want %v", codes, want)
	}
	if resp := send(other); resp.StatusCode != 200 {
		t.Fatalf("another %s: %d, want 200", hdr, resp.StatusCode)
	}
	if got := be.seen(); got != strings.Repeat(first+" ", 5)+other+" " {
		t.Fatalf("the backend saw %q, want the 5 admitted of %s and 1 of %s", got, first, other)
	}
	if n := rl.conns.Load(); n > 2 {
		t.Errorf("%d connections to rlserver for 9 checks: not kept alive", n)
	}
}

// requireGateway is the path of a gateway's binary; missing, the test skips, or fails
// under RLSERVER_REQUIRE_GATEWAYS=1 (CI).
func requireGateway(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("RLSERVER_REQUIRE_GATEWAYS") == "1" {
			t.Fatalf("%s not found and RLSERVER_REQUIRE_GATEWAYS=1: %v", name, err)
		}
		t.Skipf("%s not found (apt-get install %s)", name, name)
	}
	return path
}

// edge is rlserver's HTTP front on the real engine under checkPolicy, at checkAt.
type edge struct {
	addr  string
	conns atomic.Int64 // connections accepted
	srv   *Server
}

// stop closes the front and its connections: the limiter is unreachable.
func (e *edge) stop() { e.srv.http.Close() }

type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

func startEdge(t *testing.T) *edge {
	t.Helper()
	e, _ := newEngine(t, checkPolicy)
	srv, err := New(Config{Decider: e, Now: func() int64 { return checkAt }})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ed := &edge{addr: ln.Addr().String(), srv: srv}
	go srv.ServeHTTP(countingListener{ln, &ed.conns})
	t.Cleanup(func() { srv.Close() })
	return ed
}

// backend counts the requests it serves, by their q parameter.
type backend struct {
	addr string
	mu   sync.Mutex
	log  strings.Builder
}

func startBackend(t *testing.T) *backend {
	t.Helper()
	b := &backend{}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.log.WriteString(r.URL.Query().Get("q") + " ")
		b.mu.Unlock()
	}))
	t.Cleanup(s.Close)
	b.addr = s.Listener.Addr().String()
	return b
}

func (b *backend) seen() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.log.String()
}

// readmeBlock is docs/gateway.md's fenced block after "<!-- tested: name -->".
func readmeBlock(t *testing.T, name string) string {
	t.Helper()
	return docBlock(t, "../docs/gateway.md", name)
}

// docBlock is file's fenced block after "<!-- tested: name -->".
func docBlock(t *testing.T, file, name string) string {
	t.Helper()
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(text), "<!-- tested: "+name+" -->\n```")
	if !ok {
		t.Fatalf("%s has no block marked <!-- tested: %s -->", file, name)
	}
	_, rest, _ = strings.Cut(rest, "\n") // the fence's language
	block, _, ok := strings.Cut(rest, "\n```\n")
	if !ok {
		t.Fatalf("%s: the %s block is not closed", file, name)
	}
	return block + "\n"
}

// substitute replaces each old with its new, failing when the text lacks one: the
// page and the test must agree on the placeholders.
func substitute(t *testing.T, text string, pairs ...string) string {
	t.Helper()
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(text, pairs[i]) {
			t.Fatalf("the block lacks %q:\n%s", pairs[i], text)
		}
		text = strings.ReplaceAll(text, pairs[i], pairs[i+1])
	}
	return text
}

// freePort is a loopback port free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// process is a gateway started for a test, stopped when it ends.
type process struct {
	cmd    *exec.Cmd
	done   chan struct{}
	mu     sync.Mutex
	stderr bytes.Buffer
}

func (p *process) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.Write(b)
}

func (p *process) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

func startProcess(t *testing.T, dir string, env []string, bin string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Dir = dir
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s said:\n%s", filepath.Base(bin), p.output())
		}
	})
	return p
}

// waitListening waits for the process to accept connections on addr.
func (p *process) waitListening(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case <-p.done:
			t.Fatalf("%s exited: %s", p.cmd.Path, p.output())
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not listening on %s after 15 s: %s", p.cmd.Path, addr, p.output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
