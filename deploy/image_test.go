package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/poll"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// maxImageSize bounds the image: the static binary (~18 MB) and a few small files.
const maxImageSize = 40 << 20

// imageInspect is what `podman image inspect` (and docker's) says of an image that
// the tests check.
type imageInspect struct {
	Architecture string
	Os           string
	Size         int64
	Config       struct {
		User         string
		Entrypoint   []string
		Cmd          []string
		ExposedPorts map[string]struct{}
		Volumes      map[string]struct{}
		Labels       map[string]string
	}
}

// parseInspect reads inspect's output: an array of one image.
func parseInspect(out []byte) (imageInspect, error) {
	var imgs []imageInspect
	if err := json.Unmarshal(out, &imgs); err != nil {
		return imageInspect{}, fmt.Errorf("image inspect: %w", err)
	}
	if len(imgs) != 1 {
		return imageInspect{}, fmt.Errorf("image inspect: %d images, want 1", len(imgs))
	}
	return imgs[0], nil
}

// checkImage lists how an image differs from what the Containerfile promises: user
// and group 65532 (never root), its entrypoint, ports, volume and OCI labels, the
// version it was built with, and a size under maxImageSize.
func checkImage(got imageInspect, want image, version string) []error {
	var errs []error
	uid, gid, _ := strings.Cut(got.Config.User, ":")
	if uid != strconv.Itoa(nonRoot) || gid != strconv.Itoa(nonRoot) {
		errs = append(errs, fmt.Errorf("user %q, want %d:%d (an empty user or 0 is root)", got.Config.User, nonRoot, nonRoot))
	}
	if !slices.Equal(got.Config.Entrypoint, want.entrypoint) || len(got.Config.Cmd) > 0 {
		errs = append(errs, fmt.Errorf("entrypoint %q cmd %q, want %q and no cmd", got.Config.Entrypoint, got.Config.Cmd, want.entrypoint))
	}
	var ports []int
	for p := range got.Config.ExposedPorts {
		n, err := strconv.Atoi(strings.TrimSuffix(p, "/tcp"))
		if err != nil {
			errs = append(errs, fmt.Errorf("exposed port %q is not TCP", p))
		}
		ports = append(ports, n)
	}
	slices.Sort(ports)
	if !slices.Equal(ports, want.ports) {
		errs = append(errs, fmt.Errorf("exposed ports %v, want %v", ports, want.ports))
	}
	if _, ok := got.Config.Volumes[want.volume]; !ok || len(got.Config.Volumes) != 1 {
		errs = append(errs, fmt.Errorf("volumes %v, want %s", got.Config.Volumes, want.volume))
	}
	for k, v := range map[string]string{
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.title":    "rlserver",
		"org.opencontainers.image.source":   "https://github.com/rlserver/rlserver",
		"org.opencontainers.image.licenses": "Apache-2.0", // LICENSE
	} {
		if got.Config.Labels[k] != v {
			errs = append(errs, fmt.Errorf("label %s=%q, want %q", k, got.Config.Labels[k], v))
		}
	}
	if got.Os != "linux" {
		errs = append(errs, fmt.Errorf("os %q, want linux", got.Os))
	}
	if got.Size <= 0 || got.Size > maxImageSize {
		errs = append(errs, fmt.Errorf("size %d bytes, want at most %d", got.Size, maxImageSize))
	}
	return errs
}

// TestCheckImage: checkImage refuses an image running as root, or any other way off
// what the Containerfile says, and accepts the one it describes.
func TestCheckImage(t *testing.T) {
	want := readContainerfile(t)
	good := func() imageInspect {
		var im imageInspect
		im.Os, im.Size = "linux", 19<<20
		im.Config.User = "65532:65532"
		im.Config.Entrypoint = want.entrypoint
		im.Config.ExposedPorts = map[string]struct{}{}
		for _, p := range want.ports {
			im.Config.ExposedPorts[strconv.Itoa(p)+"/tcp"] = struct{}{}
		}
		im.Config.Volumes = map[string]struct{}{want.volume: {}}
		im.Config.Labels = map[string]string{"org.opencontainers.image.version": "v1", "org.opencontainers.image.title": "rlserver",
			"org.opencontainers.image.source": "https://github.com/rlserver/rlserver", "org.opencontainers.image.licenses": "Apache-2.0"}
		return im
	}
	if errs := checkImage(good(), want, "v1"); len(errs) > 0 {
		t.Fatalf("the image the Containerfile describes: %v", errs)
	}
	for _, tc := range []struct {
		name   string
		change func(*imageInspect)
		want   string
	}{
		{"no user is root", func(im *imageInspect) { im.Config.User = "" }, `user ""`},
		{"user 0", func(im *imageInspect) { im.Config.User = "0" }, `user "0"`},
		{"user root", func(im *imageInspect) { im.Config.User = "root" }, `user "root"`},
		{"group root", func(im *imageInspect) { im.Config.User = "65532:0" }, `user "65532:0"`},
		{"a port missing", func(im *imageInspect) { delete(im.Config.ExposedPorts, "9090/tcp") }, "exposed ports [6380 8080 8081]"},
		{"another entrypoint", func(im *imageInspect) { im.Config.Entrypoint = []string{"/bin/sh"} }, `entrypoint ["/bin/sh"]`},
		{"a cmd", func(im *imageInspect) { im.Config.Cmd = []string{"-x"} }, `cmd ["-x"]`},
		{"no volume", func(im *imageInspect) { im.Config.Volumes = nil }, "volumes map[]"},
		{"another version", func(im *imageInspect) { im.Config.Labels["org.opencontainers.image.version"] = "v2" }, `org.opencontainers.image.version="v2"`},
		{"no licence", func(im *imageInspect) { delete(im.Config.Labels, "org.opencontainers.image.licenses") }, "org.opencontainers.image.licenses"},
		{"too large", func(im *imageInspect) { im.Size = 100 << 20 }, "size 104857600"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			im := good()
			tc.change(&im)
			errs := checkImage(im, want, "v1")
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) {
				t.Errorf("errors %v, want one saying %q", errs, tc.want)
			}
		})
	}
	if _, err := parseInspect([]byte(`[]`)); err == nil {
		t.Error("inspect of no image: no error")
	}
}

// containerTool is podman, else a docker whose daemon answers (a docker client
// alone cannot build). Without either the test skips, or fails under
// RLSERVER_REQUIRE_PODMAN=1, as CI sets.
func containerTool(t *testing.T) string {
	if path, err := exec.LookPath("podman"); err == nil {
		return path
	}
	if path, err := exec.LookPath("docker"); err == nil && exec.Command(path, "info").Run() == nil {
		return path
	}
	const hint = "neither podman nor a docker with a running daemon on PATH"
	if os.Getenv("RLSERVER_REQUIRE_PODMAN") == "1" {
		t.Fatal(hint + " (RLSERVER_REQUIRE_PODMAN=1 makes this a failure)")
	}
	t.Skip(hint + "; RLSERVER_REQUIRE_PODMAN=1 turns this skip into a failure")
	return ""
}

func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return out
}

// TestImage builds the image with `make image` (no container runs here: `podman run`
// is not permitted), checks what inspect says of it, takes /bin out of it and runs the
// binary as the image's entrypoint would, then as envoyproxy/ratelimit's Deployment
// does, asking RL.TOKEN over RESP and ShouldRateLimit over gRPC.
func TestImage(t *testing.T) {
	tool := containerTool(t)
	version := fmt.Sprintf("test-%d", time.Now().UnixNano())
	tag := "localhost/rlserver-test:" + version
	t.Cleanup(func() { exec.Command(tool, "rmi", "-f", tag).Run() })
	run(t, "make", "-C", "..", "image", "IMAGE="+tag, "VERSION="+version, "IMAGE_TOOL="+tool)

	want := readContainerfile(t)
	info, err := parseInspect(run(t, tool, "image", "inspect", tag))
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range checkImage(info, want, version) {
		t.Error(err)
	}
	t.Logf("image %s: %d bytes, user %s", tag, info.Size, info.Config.User)

	cid := strings.TrimSpace(string(run(t, tool, "create", tag)))
	t.Cleanup(func() { exec.Command(tool, "rm", "-f", cid).Run() })
	root := t.TempDir()
	run(t, tool, "cp", cid+":/bin", filepath.Join(root, "bin"))
	for _, f := range []string{"etc/passwd", "etc/group"} {
		run(t, tool, "cp", cid+":/"+f, filepath.Join(root, filepath.Base(f)))
	}
	if passwd := read(t, filepath.Join(root, "passwd")); !bytes.Contains(passwd, []byte(":65532:65532:")) {
		t.Errorf("/etc/passwd names no user 65532:\n%s", passwd)
	}
	bin := filepath.Join(root, want.entrypoint[0])
	if out := run(t, bin, "--version"); !strings.Contains(string(out), version) {
		t.Errorf("--version: %q, want %s", out, version)
	}
	cm := standaloneLimits(t)

	t.Run("entrypoint", func(t *testing.T) {
		limits := t.TempDir()
		if err := loadPolicyConfigMap("configmap", cm, limits); err != nil {
			t.Fatal(err)
		}
		// The entrypoint on loopback ports free here, the policies where the pod mounts them.
		args := slices.Clone(want.entrypoint[1:])
		addr := map[string]string{}
		for i := 0; i+1 < len(args); i++ {
			switch {
			case slices.Contains(listenFlags, args[i]):
				addr[args[i]] = "127.0.0.1:" + freePort(t)
				args[i+1] = addr[args[i]]
			case args[i] == "-limits":
				args[i+1] = limits
			}
		}
		startBinary(t, bin, args, nil)
		rdb := redis.NewClient(&redis.Options{Addr: addr["-addr"]})
		defer rdb.Close()
		poll.UntilOK(t, 20*time.Second, "RESP", func() error { return rdb.Ping(context.Background()).Err() })
		reply, err := rdb.Do(context.Background(), "RL.TOKEN", "user:1", 10, 1000).Slice()
		if err != nil || len(reply) < 2 || reply[0] != int64(1) || reply[1] != int64(10) {
			t.Errorf("RL.TOKEN user:1 10 1000: %v %v, want allowed of 10", reply, err)
		}
		poll.UntilOK(t, 20*time.Second, "gRPC", dialer(addr["-rls-addr"]))
		askRLS(t, addr["-rls-addr"])
		poll.UntilOK(t, 20*time.Second, "metrics", dialer(addr["-metrics-addr"]))
		res, err := http.Get("http://" + addr["-metrics-addr"] + "/metrics")
		if err != nil || res.StatusCode != http.StatusOK {
			t.Errorf("/metrics: %v %v", res, err)
		} else {
			res.Body.Close()
		}
	})

	// envoyproxy/ratelimit's Deployment with only the image changed: its command and
	// environment, the ConfigMap mounted at RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/config.
	t.Run("ratelimit deployment", func(t *testing.T) {
		objs, err := decodeManifest("testdata/ratelimit-deployment.yaml", read(t, "testdata/ratelimit-deployment.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		c := objs[0].obj.(*appsv1.Deployment).Spec.Template.Spec.Containers[0]
		dataRoot := t.TempDir()
		env := []string{}
		for _, e := range c.Env {
			if e.Name == "RUNTIME_ROOT" {
				mount := strings.TrimPrefix(c.VolumeMounts[0].MountPath, e.Value)
				if err := os.MkdirAll(filepath.Join(dataRoot, mount), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := loadPolicyConfigMap("configmap", cm, filepath.Join(dataRoot, mount)); err != nil {
					t.Fatal(err)
				}
				e.Value = dataRoot
			}
			env = append(env, e.Name+"="+e.Value)
		}
		// Their listeners' ports (GRPC_PORT, PORT: 8081, 8080 by default) and RESP's
		// (127.0.0.1:6380) are taken by others on a shared machine: free ones instead.
		grpcAddr, httpAddr := "127.0.0.1:"+freePort(t), "127.0.0.1:"+freePort(t)
		_, gp, _ := net.SplitHostPort(grpcAddr)
		_, hp, _ := net.SplitHostPort(httpAddr)
		env = append(env, "GRPC_PORT="+gp, "PORT="+hp)
		startBinary(t, filepath.Join(root, c.Command[0]), append(slices.Clone(c.Args), "-addr", "127.0.0.1:"+freePort(t)), env)
		poll.UntilOK(t, 20*time.Second, "/healthcheck", func() error {
			res, err := http.Get("http://" + httpAddr + "/healthcheck")
			if err != nil {
				return err
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				return fmt.Errorf("status %d", res.StatusCode)
			}
			return nil
		})
		poll.UntilOK(t, 20*time.Second, "gRPC", dialer(grpcAddr))
		askRLS(t, grpcAddr)
	})
}

// standaloneLimits is the policy ConfigMap of the standalone manifests.
func standaloneLimits(t *testing.T) *corev1.ConfigMap {
	objs, err := decodeManifest("kubernetes/standalone/configmap.yaml", read(t, "kubernetes/standalone/configmap.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return objs[0].obj.(*corev1.ConfigMap)
}

// askRLS asks ShouldRateLimit for a user of the ConfigMap's edge domain: OK, under its
// limit of 100 a minute, 99 left.
func askRLS(t *testing.T, addr string) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := pb.NewRateLimitServiceClient(conn).ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "edge",
		Descriptors: []*rlv3.RateLimitDescriptor{{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "user", Value: "alice"}}}}})
	if err != nil {
		t.Fatalf("ShouldRateLimit: %v", err)
	}
	st := res.GetStatuses()
	if res.GetOverallCode() != pb.RateLimitResponse_OK || len(st) != 1 ||
		st[0].GetCurrentLimit().GetRequestsPerUnit() != 100 || st[0].GetLimitRemaining() != 99 {
		t.Errorf("ShouldRateLimit edge user=alice: %v, want OK, limit 100, 99 remaining", res)
	}
}

// startBinary runs bin with args and env (nothing else of the test's environment),
// killed when t ends; its output is logged if t fails.
func startBinary(t *testing.T, bin string, args, env []string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append([]string{}, env...) // not nil: nil would be the test's environment
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("%s %s:\n%s", bin, strings.Join(args, " "), out.String())
		}
	})
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// dialer is a readiness check: addr accepts a TCP connection.
func dialer(addr string) func() error {
	return func() error {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	}
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
