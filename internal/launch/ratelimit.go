package launch

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// RatelimitVersion is the envoyproxy/ratelimit that the side-by-side tests and
// make bench-rls run against (.ci/run installs it).
const RatelimitVersion = "v1.4.1-0.20260122083618-3fb702589d36"

// RatelimitBin finds envoyproxy/ratelimit's service_cmd: $RATELIMIT_BIN, else on
// PATH, else where go install put it ($GOBIN, $(go env GOPATH)/bin).
func RatelimitBin() (string, error) {
	if bin := os.Getenv("RATELIMIT_BIN"); bin != "" {
		return bin, nil
	}
	if bin, err := exec.LookPath("service_cmd"); err == nil {
		return bin, nil
	}
	for _, v := range []string{"GOBIN", "GOPATH"} {
		out, err := exec.Command("go", "env", v).Output()
		dir := strings.TrimSpace(string(out))
		if err != nil || dir == "" {
			continue
		}
		if v == "GOPATH" {
			dir = filepath.Join(filepath.SplitList(dir)[0], "bin")
		}
		if bin := filepath.Join(dir, "service_cmd"); isFile(bin) {
			return bin, nil
		}
	}
	return "", ErrNoRatelimit
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// Ratelimit starts envoyproxy/ratelimit's bin on free loopback ports, on the Redis at
// redisAddr, reading its policies from root/subdir/config (their
// RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY), env added to its own. It
// returns once /healthcheck answers; the Proc's Addr is its gRPC address, httpAddr
// its /json's.
func Ratelimit(bin, dir, redisAddr, root, subdir string, env ...string) (p *Proc, httpAddr string, err error) {
	for range tries {
		var addrs []string
		if addrs, err = FreeAddrs(3); err != nil {
			return nil, "", err
		}
		if p, err = ratelimitAt(bin, dir, redisAddr, root, subdir, addrs, env); err == nil {
			return p, addrs[1], nil
		}
	}
	return nil, "", err
}

func ratelimitAt(bin, dir, redisAddr, root, subdir string, addrs, extra []string) (*Proc, error) {
	log, err := LogIn(dir, "ratelimit")
	if err != nil {
		return nil, err
	}
	port := func(addr string) string { _, p, _ := net.SplitHostPort(addr); return p }
	env := append([]string{
		"USE_STATSD=false", "LOG_LEVEL=warn",
		"REDIS_SOCKET_TYPE=tcp", "REDIS_URL=" + redisAddr,
		"RUNTIME_ROOT=" + root, "RUNTIME_SUBDIRECTORY=" + subdir, "RUNTIME_WATCH_ROOT=false",
		"GRPC_HOST=127.0.0.1", "GRPC_PORT=" + port(addrs[0]),
		"HOST=127.0.0.1", "PORT=" + port(addrs[1]),
		"DEBUG_HOST=127.0.0.1", "DEBUG_PORT=" + port(addrs[2]),
	}, extra...)
	hc := &http.Client{Timeout: time.Second}
	ready := func() error {
		// /healthcheck answers once the policies are loaded and Redis is dialled, and
		// gRPC is started first.
		resp, err := hc.Get("http://" + addrs[1] + "/healthcheck")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/healthcheck: %s", resp.Status)
		}
		c, err := net.DialTimeout("tcp", addrs[0], time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	}
	return Start(Spec{Name: "ratelimit", Addr: addrs[0], Log: log, Argv: []string{bin}, Env: env, Ready: ready})
}
