package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rlserver/rlserver/internal/launch"
)

// edgePolicy admits every client of the run, but one address always refused: the
// proof that nginx's auth_request reaches rlserver.
const edgePolicy = `domain: bench
descriptors:
  - key: remote_address
    value: 192.0.2.1
    rate_limit: {unit: hour, requests_per_unit: 0}
  - key: remote_address
    rate_limit: {unit: hour, requests_per_unit: 1000000000}
`

// edgeNginx is one nginx with four servers alike but for the limit: none, auth_request
// to rlserver's /check (kept alive), auth_request to a stub that answers 200 at once
// (nginx itself, kept alive: what the subrequest costs nginx whoever answers it), and
// limit_req (per process). {{...}} are filled in.
const edgeNginx = `worker_processes 1;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 1000000;
    client_body_temp_path {{dir}}/body; proxy_temp_path {{dir}}/proxy;
    fastcgi_temp_path {{dir}}/fastcgi; uwsgi_temp_path {{dir}}/uwsgi; scgi_temp_path {{dir}}/scgi;
    set_real_ip_from 127.0.0.1;
    real_ip_header X-Forwarded-For;
    upstream rlserver { server {{rlserver}}; keepalive 64; }
    upstream stub { server {{stub}}; keepalive 64; }
    server { listen {{stub}}; location / { return 200; } }
    limit_req_zone $binary_remote_addr zone=perip:10m rate=1000000r/s;
    server { listen {{alone}}; root {{dir}}/www; }
    server {
        listen {{auth}}; root {{dir}}/www;
        location / { auth_request /.rlserver; }
        location = /.rlserver {
            internal;
            proxy_pass http://rlserver/check?domain=bench&descriptor=remote_address&status=403;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
            proxy_set_header X-Real-IP $remote_addr;
            proxy_set_header X-Forwarded-For "";
        }
    }
    server {
        listen {{authstub}}; root {{dir}}/www;
        location / { auth_request /.stub; }
        location = /.stub {
            internal;
            proxy_pass http://stub/check;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
        }
    }
    server { listen {{limitreq}}; root {{dir}}/www; location / { limit_req zone=perip burst=100000 nodelay; } }
}
`

// edgeTarget is one of nginx's servers under load.
type edgeTarget struct{ name, addr string }

// runEdgeBench is `rlbench edge` (make bench-edge): nginx with auth_request to
// rlserver's /check against nginx alone and nginx with limit_req, the servers (nginx's
// one worker, rlserver) pinned to -server-cpu and this load generator to -load-cpu.
// Each target is loaded in turn, in rotating order over -rounds rounds: first one
// connection at a time for the latency, then -conns connections for the throughput.
// The last line is the headline:
//
//	bench-edge: auth_request to rlserver adds p50 <a> ms (target <= 0.3), keeps <b>% of nginx alone's req/s (target >= 50%); limit_req adds ...
func runEdgeBench(ctx context.Context, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("rlbench edge", flag.ContinueOnError)
	bin := fs.String("rlserver-bin", "", "rlserver `binary`; empty: go build ./cmd/rlserver")
	nginxBin := fs.String("nginx-bin", "nginx", "nginx `binary`")
	conns := fs.Int("conns", 32, "connections of the throughput phase")
	load := fs.Duration("time", 5*time.Second, "load time per target, phase and round")
	rounds := fs.Int("rounds", 2, "rounds, each loading every target")
	clients := fs.Int("clients", 1000, "client addresses (X-Forwarded-For) drawn in turn")
	serverCPU := fs.Int("server-cpu", 0, "CPU nginx and rlserver are pinned to; -1: no pinning")
	loadCPU := fs.Int("load-cpu", 1, "CPU this load generator is pinned to; -1: no pinning")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *conns < 1 || *load <= 0 || *rounds < 1 || *clients < 1 || *clients > 65000 || fs.NArg() != 0 {
		return errors.New("edge: -conns, -time, -rounds and -clients (up to 65000) must be positive, and no argument follows the flags")
	}
	nginx, err := exec.LookPath(*nginxBin)
	if err != nil {
		return fmt.Errorf("edge: %w (apt-get install nginx)", err)
	}
	dir, binary, err := rlserverIn(ctx, *bin, "edge")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := pinApart(*serverCPU, *loadCPU); err != nil {
		return err
	}
	targets, stop, err := startEdge(binary, nginx, dir, *serverCPU)
	defer stop()
	if err != nil {
		return err
	}
	// auth_request must reach rlserver: the refused address gets nginx's 403.
	if code, err := edgeGet(targets[1].addr, "192.0.2.1"); err != nil || code != http.StatusForbidden {
		return fmt.Errorf("edge: the refused address through auth_request: %d %v, want 403", code, err)
	}
	fmt.Fprintf(w, "== edge: GET of a static file through nginx (1 worker): alone, + auth_request to rlserver /check (keepalive), + auth_request to a stub, + limit_req; %d client addresses; 1 connection then %d, %v per target, phase and round, %d rounds; servers on CPU %d, load on CPU %d ==\n",
		*clients, *conns, *load, *rounds, *serverCPU, *loadCPU)
	xff := make([]string, *clients)
	for i := range xff {
		xff[i] = fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255+1)
	}
	n := len(targets)
	lat := make([]histogram, n)
	thr := make([]histogram, n)
	took := make([]time.Duration, n)
	errs := make([]int, n)
	for r := range *rounds {
		for k := range n {
			i := (k + r) % n
			h, e, _ := edgeLoad(ctx, targets[i].addr, 1, *load, xff)
			lat[i].merge(&h)
			errs[i] += e
			h, e, d := edgeLoad(ctx, targets[i].addr, *conns, *load, xff)
			thr[i].merge(&h)
			errs[i] += e
			took[i] += d
		}
	}
	t := newTable("nginx", "p50 ms (1 conn)", "p99 ms (1 conn)", fmt.Sprintf("req/s (%d conns)", *conns), fmt.Sprintf("p50 ms (%d conns)", *conns), "errors")
	rate := make([]float64, n)
	p50 := make([]float64, n)
	for i, tg := range targets {
		rate[i] = float64(thr[i].total) / took[i].Seconds()
		p50[i] = lat[i].quantile(0.5)
		t.row(tg.name, ms(p50[i]), ms(lat[i].quantile(0.99)), fmt.Sprintf("%.0f", rate[i]), ms(thr[i].quantile(0.5)), strconv.Itoa(errs[i]))
	}
	t.write(w)
	fmt.Fprintf(w, "bench-edge: auth_request to rlserver adds p50 %s ms (target <= 0.3), keeps %.0f%% of nginx alone's req/s (target >= 50%%); to a stub answering 200, keeps %.0f%%; limit_req adds p50 %s ms, keeps %.0f%%\n",
		ms(p50[1]-p50[0]), 100*rate[1]/rate[0], 100*rate[2]/rate[0], ms(p50[3]-p50[0]), 100*rate[3]/rate[0])
	return nil
}

// startEdge starts rlserver (-http-addr under edgePolicy) and nginx, both on cpu
// (unless negative), and returns nginx's three servers.
func startEdge(rlserver, nginx, dir string, cpu int) ([]edgeTarget, func(), error) {
	var procs []*launch.Proc
	stop := func() {
		for _, p := range procs {
			p.Stop()
		}
	}
	for _, sub := range []string{"www", "logs"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, stop, err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "www", "index.html"), []byte("ok\n"), 0o644); err != nil {
		return nil, stop, err
	}
	policy := filepath.Join(dir, "edge.yaml")
	if err := os.WriteFile(policy, []byte(edgePolicy), 0o644); err != nil {
		return nil, stop, err
	}
	addrs, err := launch.FreeAddrs(6)
	if err != nil {
		return nil, stop, err
	}
	rl, err := launch.RLServer(rlserver, dir, "-loglevel", "WARN", "-http-addr", addrs[0], "-limits", policy)
	if err != nil {
		return nil, stop, err
	}
	procs = append(procs, rl)
	if cpu >= 0 {
		if err := pin(rl.Pid(), cpu); err != nil {
			return nil, stop, err
		}
	}
	conf := strings.NewReplacer("{{dir}}", dir, "{{rlserver}}", addrs[0], "{{alone}}", addrs[1], "{{auth}}", addrs[2], "{{limitreq}}", addrs[3],
		"{{authstub}}", addrs[4], "{{stub}}", addrs[5]).Replace(edgeNginx)
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644); err != nil {
		return nil, stop, err
	}
	argv := []string{nginx, "-e", "stderr", "-p", dir, "-c", "nginx.conf", "-g", "daemon off; pid " + filepath.Join(dir, "nginx.pid") + "; error_log stderr;" + rootUser()}
	if cpu >= 0 { // the worker is forked later: it inherits the affinity
		argv = append([]string{"taskset", "-c", strconv.Itoa(cpu)}, argv...)
	}
	log, err := launch.LogIn(dir, "nginx")
	if err != nil {
		return nil, stop, err
	}
	ready := func() error {
		for _, a := range append(addrs[1:], addrs[0]) {
			c, err := net.DialTimeout("tcp", a, time.Second)
			if err != nil {
				return err
			}
			c.Close()
		}
		return nil
	}
	ng, err := launch.Start(launch.Spec{Name: "nginx", Addr: addrs[1], Log: log, Argv: argv, Ready: ready})
	if err != nil {
		return nil, stop, err
	}
	procs = append(procs, ng)
	return []edgeTarget{{"alone", addrs[1]}, {"+ auth_request rlserver", addrs[2]}, {"+ auth_request stub", addrs[4]}, {"+ limit_req", addrs[3]}}, stop, nil
}

// rootUser keeps nginx's worker root when the run is, so it reads the run's directory.
func rootUser() string {
	if os.Geteuid() == 0 {
		return " user root;"
	}
	return ""
}

// edgeGet sends one GET as client address xff and returns the status.
func edgeGet(addr, xff string) (int, error) {
	req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
	req.Header.Set("X-Forwarded-For", xff)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// edgeLoad sends GETs on conns kept-alive connections for d, each connection one
// request at a time, the client addresses in turn; it returns the latencies, the
// count of answers other than 200 (and of broken connections), and the time taken.
func edgeLoad(ctx context.Context, addr string, conns int, d time.Duration, xff []string) (histogram, int, time.Duration) {
	reqs := make([][]byte, len(xff))
	for i, a := range xff {
		reqs[i] = []byte("GET / HTTP/1.1\r\nHost: bench\r\nX-Forwarded-For: " + a + "\r\n\r\n")
	}
	hists := make([]histogram, conns)
	errs := make([]int, conns)
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, e := &hists[c], &errs[c]
			var conn net.Conn
			var br *bufio.Reader
			for i := c; ctx.Err() == nil && time.Now().Before(deadline); i += conns {
				if conn == nil {
					var err error
					if conn, err = net.DialTimeout("tcp", addr, time.Second); err != nil {
						*e++
						time.Sleep(10 * time.Millisecond)
						continue
					}
					br = bufio.NewReader(conn)
				}
				t0 := time.Now()
				_, err := conn.Write(reqs[i%len(reqs)])
				var resp *http.Response
				if err == nil {
					resp, err = http.ReadResponse(br, nil)
				}
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if err != nil {
					*e++
					conn.Close()
					conn = nil
					continue
				}
				h.record(time.Since(t0), 1)
				if resp.StatusCode != http.StatusOK {
					*e++
				}
				if resp.Close { // nginx's keepalive_requests reached: a new connection
					conn.Close()
					conn = nil
				}
			}
			if conn != nil {
				conn.Close()
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	var all histogram
	total := 0
	for c := range conns {
		all.merge(&hists[c])
		total += errs[c]
	}
	return all, total, took
}
