package deploy

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/resp"
	corev1 "k8s.io/api/core/v1"
)

// sentinelScripts writes the Sentinel variant's init scripts into a directory of t,
// the pod's paths (/scripts, /var/lib/rlserver, /data) and Sentinels' names and port
// turned into the test's: sentinels is "host -p port" of one Sentinel, or a dead one.
func sentinelScripts(t *testing.T, sentinels string) (dir string) {
	t.Helper()
	objs, err := decodeManifest("kubernetes/sentinel/sentinel.yaml", read(t, "kubernetes/sentinel/sentinel.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cm := objs[0].obj.(*corev1.ConfigMap)
	dir = t.TempDir()
	for _, sub := range []string{"scripts", "state", "data"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	replaced := map[string]bool{}
	for name, text := range cm.Data {
		for _, r := range [][2]string{
			{`"rlserver-sentinel-$s.rlserver-sentinel" -p 26379`, sentinels},
			{"/scripts/", dir + "/scripts/"}, {"/var/lib/rlserver/", dir + "/state/"}, {"/data/", dir + "/data/"},
		} {
			replaced[r[0]] = replaced[r[0]] || strings.Contains(text, r[0])
			text = strings.ReplaceAll(text, r[0], r[1])
		}
		if err := os.WriteFile(filepath.Join(dir, "scripts", name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for old, ok := range replaced {
		if !ok {
			t.Fatalf("no script has %q to change", old)
		}
	}
	return dir
}

// runScript runs one init script as a pod named host with IP podIP runs it, and
// returns the file it writes.
func runScript(t *testing.T, dir, script, host, podIP, wrote string) string {
	t.Helper()
	cmd := exec.Command("sh", filepath.Join(dir, "scripts", script))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOSTNAME=" + host, "POD_IP=" + podIP}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s as %s: %v\n%s", script, host, err, out)
	}
	return string(read(t, filepath.Join(dir, wrote)))
}

// TestSentinelInitScripts runs the Sentinel variant's init scripts with redis-cli
// against a real Sentinel: before any Sentinel answers, rlserver-0 starts a primary
// and the others its replicas, and the Sentinels monitor rlserver-0; once one answers,
// every pod follows the primary it names, and the primary itself stays one. The
// sentinel.conf written is one redis-server --sentinel runs.
func TestSentinelInitScripts(t *testing.T) {
	testenv.RedisTool(t, "redis-cli")
	testenv.RedisTool(t, "redis-server")

	dead := sentinelScripts(t, "127.0.0.1 -p "+freePort(t))
	if got := runScript(t, dead, "rlserver-conf.sh", "rlserver-0", "10.0.0.1", "state/rlserver.conf"); got != "" {
		t.Errorf("rlserver-0, no Sentinel: %q, want an empty config (a primary)", got)
	}
	if got := runScript(t, dead, "rlserver-conf.sh", "rlserver-1", "10.0.0.2", "state/rlserver.conf"); got != "replicaof rlserver-0.rlserver-headless 6380\n" {
		t.Errorf("rlserver-1, no Sentinel: %q, want a replica of rlserver-0", got)
	}
	conf := runScript(t, dead, "sentinel-conf.sh", "rlserver-sentinel-0", "10.0.0.3", "data/sentinel.conf")
	if !strings.Contains(conf, "\nsentinel monitor rl rlserver-0.rlserver-headless 6380 2\n") {
		t.Fatalf("sentinel.conf, no Sentinel: want rlserver-0 monitored:\n%s", conf)
	}

	// That sentinel.conf, on loopback (launch sets the port), watching an rlserver.
	primary := testenv.StartServer(t, resp.Config{})
	host, port, _ := net.SplitHostPort(primary)
	conf = strings.Replace(conf, "port 26379\n", "", 1)
	conf = strings.Replace(conf, "rlserver-0.rlserver-headless 6380", host+" "+port, 1)
	s, err := launch.Sentinel(t.TempDir(), conf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Kill)
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr})
	defer sc.Close()
	poll.UntilOK(t, 20*time.Second, "Sentinel", func() error {
		_, err := sc.GetMasterAddrByName(context.Background(), "rl").Result()
		return err
	})
	shost, sport, _ := net.SplitHostPort(s.Addr)
	live := sentinelScripts(t, shost+" -p "+sport)
	for _, tc := range []struct{ host, ip, want string }{
		{"rlserver-0", "10.0.0.1", "replicaof " + host + " 6380\n"}, // restarted after a failover
		{"rlserver-1", "10.0.0.2", "replicaof " + host + " 6380\n"},
		{"rlserver-1", host, ""}, // the primary Sentinel names
	} {
		if got := runScript(t, live, "rlserver-conf.sh", tc.host, tc.ip, "state/rlserver.conf"); got != tc.want {
			t.Errorf("%s at %s, Sentinel up: %q, want %q", tc.host, tc.ip, got, tc.want)
		}
	}
	if conf := runScript(t, live, "sentinel-conf.sh", "rlserver-sentinel-1", "10.0.0.4", "data/sentinel.conf"); !strings.Contains(conf, "sentinel monitor rl "+host+" 6380 2\n") {
		t.Errorf("sentinel.conf, Sentinel up: want the primary it names monitored:\n%s", conf)
	}
}
